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

/**
 * Reports once: success at once; a failure after destroying every stream, a turn of the loop
 * later (once their close handlers ran).
 */
function settlerOf(
  streams: readonly (Readable | Writable)[],
  done: (error: Error | null) => void,
): (error: Error | null) => void {
  let settled = false;
  return (error) => {
    if (settled) return;
    settled = true;
    if (error === null) {
      done(null);
      return;
    }
    for (const stream of streams) stream.destroy();
    setImmediate(() => done(error));
  };
}

/** Calls `done(null)` once the last stream finished, or `done(error)` once after any failed. */
export function relayStreams(streams: RelayStreams, done: (error: Error | null) => void): void {
  const last = streams[streams.length - 1] as Writable;
  const settle = settlerOf(streams, done);
  for (let i = 0; i + 1 < streams.length; i++) (streams[i] as Readable).pipe(streams[i + 1] as Writable);
  for (const stream of streams)
    finished(stream, (error) => {
      if (error) settle(error);
      else if (stream === last) settle(null);
    });
}

/** A change made to a response on its way through, chunk by chunk (null: nothing to send now). */
export interface ChunkFilter {
  transform(chunk: Buffer): Buffer | null;
  /** What is left once the source ended. */
  flush(): Buffer | null;
}

/** A ChunkFilter threw: the exchange failed in the gateway, not because either side left. */
export class ChunkFilterFailed extends Error {
  override readonly name = "ChunkFilterFailed";
}

/**
 * relayStreams for a source, a filter and a destination, the filter called in the source's "data"
 * handler instead of as a Transform between two pipes: a stream stage delayed a stream's first
 * event by ~0.1 ms at concurrency 1 (its own buffering and ticks), for a change that needs none
 * of them. Backpressure, destruction and the single report after the close handlers are as above.
 */
export function relayFiltered(
  source: Readable,
  filter: ChunkFilter,
  destination: Writable,
  done: (error: Error | null) => void,
): void {
  const settle = settlerOf([source, destination], done);
  const filtered = (apply: () => Buffer | null): Buffer | null | undefined => {
    try {
      return apply();
    } catch (error) {
      settle(new ChunkFilterFailed(error instanceof Error ? error.name : "filter failed"));
      return undefined;
    }
  };
  let waiting = false;
  const onDrain = () => {
    waiting = false;
    source.resume();
  };
  source.on("data", (chunk: Buffer) => {
    const out = filtered(() => filter.transform(chunk));
    if (out === undefined || out === null || out.length === 0) return;
    if (!destination.write(out) && !waiting) {
      waiting = true;
      source.pause();
      destination.once("drain", onDrain);
    }
  });
  source.on("end", () => {
    const tail = filtered(() => filter.flush());
    if (tail === undefined) return;
    if (tail === null || tail.length === 0) destination.end();
    else destination.end(tail);
  });
  finished(source, (error) => {
    if (error) settle(error);
  });
  finished(destination, (error) => settle(error ?? null));
}
