// The stream-side half of the include_usage change (domain/stream-options): a filter between the
// upstream's event stream and the client that passes every event on except what the gateway's own
// request for usage added. Events are framed as they complete; a piece of an event larger than the
// bound is passed on as it is.

import { Transform, type TransformCallback } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate, constants as zlib } from "node:zlib";
import { SseFramer } from "../../domain/sse";
import { hideInjectedUsage } from "../../domain/stream-options";
import type { ChunkFilter } from "./relay";

/**
 * The filter itself: every event an upstream chunk completed, less what asking for usage added,
 * as one buffer. Used in the response's data handler (relayFiltered) when the body needs no
 * decoding, and inside InjectedUsageFilter after a decoder when it does.
 */
export class InjectedUsageHider implements ChunkFilter {
  private readonly framer: SseFramer;

  constructor(maxEventBytes: number) {
    this.framer = new SseFramer(maxEventBytes);
  }

  transform(chunk: Buffer): Buffer | null {
    const kept: Buffer[] = [];
    for (const piece of this.framer.push(chunk)) {
      const out = piece.complete ? hideInjectedUsage(piece.bytes) : piece.bytes;
      if (out !== null && out.length > 0) kept.push(out);
    }
    return joined(kept);
  }

  flush(): Buffer | null {
    return joined(this.framer.end().map((piece) => piece.bytes));
  }
}

/**
 * What one upstream chunk completed goes out as one buffer, as the upstream sent it: every buffer
 * written becomes its own write (and HTTP chunk) to the client, so twenty events written one by
 * one cost twenty. Nothing waits for a later chunk.
 */
function joined(buffers: readonly Buffer[]): Buffer | null {
  if (buffers.length === 0) return null;
  return buffers.length === 1 ? (buffers[0] as Buffer) : Buffer.concat(buffers);
}

/** InjectedUsageHider as a stream stage, for a body that is decoded first. */
export class InjectedUsageFilter extends Transform {
  private readonly hider: InjectedUsageHider;

  constructor(maxEventBytes: number) {
    super();
    this.hider = new InjectedUsageHider(maxEventBytes);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const out = this.hider.transform(chunk);
    if (out !== null) this.push(out);
    callback();
  }

  override _flush(callback: TransformCallback): void {
    const out = this.hider.flush();
    if (out !== null) this.push(out);
    callback();
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
