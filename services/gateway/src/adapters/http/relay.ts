// A response's streams joined for forwarding, as stream.pipeline joins them but without its
// AbortController: pipeline makes one per call and aborts it when the streams end, and the
// DOMException that abort builds (stack trace included) cost more of the proxy's thread than any
// other single step of a forwarded exchange. What the proxy relies on is kept:
// - backpressure both ways (pipe pauses the source while a destination's buffer is full);
// - the first error or premature close destroys every stream, and is reported once;
// - an error is reported only after the streams' own close handlers ran (a turn of the loop later),
//   as pipeline reports it, so an upstream failure has already been told by the upstream adapter.

import { finished, type Readable, type Writable } from "node:stream";

export type RelayStreams = readonly [Readable, ...(Readable & Writable)[], Writable];

/** Calls `done(null)` once the last stream finished, or `done(error)` once after any failed. */
export function relayStreams(streams: RelayStreams, done: (error: Error | null) => void): void {
  const last = streams[streams.length - 1] as Writable;
  let settled = false;
  const settle = (error: Error | null) => {
    if (settled) return;
    settled = true;
    if (error === null) {
      done(null);
      return;
    }
    for (const stream of streams) stream.destroy();
    setImmediate(() => done(error));
  };
  for (let i = 0; i + 1 < streams.length; i++) (streams[i] as Readable).pipe(streams[i + 1] as Writable);
  for (const stream of streams)
    finished(stream, (error) => {
      if (error) settle(error);
      else if (stream === last) settle(null);
    });
}
