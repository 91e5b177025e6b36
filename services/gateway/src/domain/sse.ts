// Server-sent events framed from a byte stream, incrementally: chunks go in as they arrive, whole
// events come out as the exact bytes they were (terminating blank line included), so a consumer can
// pass an event on unchanged, rewrite it or drop it. Memory is bounded: an event longer than
// `maxEventBytes` is handed out in pieces flagged incomplete as soon as it passes the bound (the
// usage reader ignores those; the stream-options filter passes them on as they are), and so is one
// that arrived whole but is longer than the bound.
//
// Line ends follow the SSE spec: "\r\n", "\n" or "\r"; an empty line ends an event.

const LF = 0x0a;
const CR = 0x0d;

export interface SsePiece {
  readonly bytes: Buffer;
  /** False for a piece of an event longer than the bound: not a whole event, do not parse it. */
  readonly complete: boolean;
}

export class SseFramer {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes in the current line so far. */
  private lineLength = 0;
  /** The last byte seen was CR: a following LF belongs to the same line end. */
  private afterCr = false;
  /** The current event already went out in pieces (it passed the bound). */
  private overflowing = false;

  constructor(private readonly maxEventBytes: number) {}

  /** The events completed by `chunk`, in order. */
  push(chunk: Buffer): SsePiece[] {
    const out: SsePiece[] = [];
    let eventStart = 0;
    const length = chunk.length;
    // Line ends are found natively, one search per line rather than a JS step per byte (a stream's
    // lines are hundreds of bytes). -2: not searched yet; -1: none left in the chunk.
    let nextLf = -2;
    let nextCr = -2;
    let index = 0;
    while (index < length) {
      if (this.afterCr) {
        this.afterCr = false;
        // The LF of a CRLF whose CR ended the previous line.
        if (chunk[index] === LF) {
          index += 1;
          continue;
        }
      }
      if (nextLf !== -1 && nextLf < index) nextLf = chunk.indexOf(LF, index);
      if (nextCr !== -1 && nextCr < index) nextCr = chunk.indexOf(CR, index);
      const lineEnd = nextLf === -1 ? nextCr : nextCr === -1 ? nextLf : Math.min(nextLf, nextCr);
      if (lineEnd === -1) {
        this.lineLength += length - index;
        break;
      }
      this.lineLength += lineEnd - index;
      const byte = chunk[lineEnd] as number;
      this.afterCr = byte === CR;
      index = lineEnd + 1;
      if (this.lineLength > 0) {
        this.lineLength = 0;
        continue;
      }
      // An empty line: the event ends here (with the LF of a CRLF when it is in this chunk).
      let end = lineEnd + 1;
      if (byte === CR && chunk[end] === LF) {
        end += 1;
        index += 1;
        this.afterCr = false;
      }
      out.push(this.take(chunk.subarray(eventStart, end), true));
      eventStart = end;
    }
    if (eventStart < length) this.keep(chunk.subarray(eventStart), out);
    return out;
  }

  /** What is left when the stream ends: an unterminated event, passed on as is. */
  end(): SsePiece[] {
    if (this.pendingBytes === 0) return [];
    return [{ bytes: this.take(Buffer.alloc(0), false).bytes, complete: false }];
  }

  private take(tail: Buffer, terminated: boolean): SsePiece {
    const bytes = this.pendingBytes === 0 ? tail : Buffer.concat([...this.pending, tail]);
    // An event over the bound is never whole, even when one chunk brought all of it.
    const complete = terminated && !this.overflowing && bytes.length <= this.maxEventBytes;
    this.pending = [];
    this.pendingBytes = 0;
    this.overflowing = false;
    return { bytes, complete };
  }

  private keep(rest: Buffer, out: SsePiece[]): void {
    // Copied: the caller's chunk may be reused or belong to a pooled buffer.
    this.pending.push(Buffer.from(rest));
    this.pendingBytes += rest.length;
    if (this.pendingBytes > this.maxEventBytes) {
      const bytes = Buffer.concat(this.pending);
      this.pending = [];
      this.pendingBytes = 0;
      this.overflowing = true;
      out.push({ bytes, complete: false });
    }
  }
}

export interface SseEvent {
  /** The `event:` field, or "" (the spec's default type "message"). */
  readonly event: string;
  /** The `data:` lines joined with "\n"; null when the event has no data field. */
  readonly data: string | null;
  /** How many `data:` lines it had. */
  readonly dataLines: number;
}

const decoder = new TextDecoder();

/** The fields of one whole event (as SseFramer hands it out). Comments and unknown fields are skipped. */
export function parseSseEvent(bytes: Uint8Array): SseEvent {
  const text = decoder.decode(bytes);
  let event = "";
  let data: string | null = null;
  let dataLines = 0;
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line.length === 0 || line.charCodeAt(0) === 0x3a) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") {
      data = data === null ? value : `${data}\n${value}`;
      dataLines += 1;
    }
  }
  return { event, data, dataLines };
}
