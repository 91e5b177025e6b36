// The stream-side half of the include_usage change (domain/stream-options): a Transform between the
// upstream's event stream and the client that passes every event on except what the gateway's own
// request for usage added. Events are framed as they complete; a piece of an event larger than the
// bound is passed on as it is.

import { Transform, type TransformCallback } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate, constants as zlib } from "node:zlib";
import { SseFramer } from "../../domain/sse";
import { hideInjectedUsage } from "../../domain/stream-options";

export class InjectedUsageFilter extends Transform {
  private readonly framer: SseFramer;

  constructor(maxEventBytes: number) {
    super();
    this.framer = new SseFramer(maxEventBytes);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const kept: Buffer[] = [];
    for (const piece of this.framer.push(chunk)) {
      const out = piece.complete ? hideInjectedUsage(piece.bytes) : piece.bytes;
      if (out !== null && out.length > 0) kept.push(out);
    }
    this.pushAll(kept);
    callback();
  }

  override _flush(callback: TransformCallback): void {
    this.pushAll(this.framer.end().map((piece) => piece.bytes));
    callback();
  }

  /**
   * What one upstream chunk completed goes out as one buffer, as the upstream sent it: every buffer
   * pushed becomes its own write (and HTTP chunk) to the client, so twenty events pushed one by one
   * cost twenty. Nothing waits for a later chunk.
   */
  private pushAll(buffers: readonly Buffer[]): void {
    if (buffers.length === 1) this.push(buffers[0]);
    else if (buffers.length > 1) this.push(Buffer.concat(buffers));
  }
}

/** A decoder for a response's content-encoding, or null for one the gateway cannot decode. */
export function decoderFor(encoding: string): Transform | null {
  // A stream cut short still gives up what it decoded so far.
  const options = { finishFlush: zlib.Z_SYNC_FLUSH };
  switch (encoding) {
    case "gzip":
    case "x-gzip":
      return createGunzip(options);
    case "deflate":
      return createInflate(options);
    case "br":
      return createBrotliDecompress({ finishFlush: zlib.BROTLI_OPERATION_FLUSH });
    default:
      return null;
  }
}
