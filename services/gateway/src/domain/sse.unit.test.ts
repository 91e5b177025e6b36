import { describe, expect, it } from "vitest";
import { parseSseEvent, SseFramer } from "./sse";

const frame = (max: number, ...chunks: string[]) => {
  const framer = new SseFramer(max);
  const pieces = chunks.flatMap((chunk) => framer.push(Buffer.from(chunk)));
  return [...pieces, ...framer.end()].map((piece) => ({ text: piece.bytes.toString(), complete: piece.complete }));
};

describe("SseFramer", () => {
  it("hands out whole events as their exact bytes, whatever the line ends", () => {
    expect(frame(1000, "data: a\n\ndata: b\r\n\r\nevent: x\rdata: c\r\r", "data: d\n")).toEqual([
      { text: "data: a\n\n", complete: true },
      { text: "data: b\r\n\r\n", complete: true },
      { text: "event: x\rdata: c\r\r", complete: true },
      { text: "data: d\n", complete: false },
    ]);
  });

  it("keeps a CRLF split over two chunks as one line end", () => {
    expect(frame(1000, "data: a\r", "\n\r", "\ndata: b\n\n")).toEqual([
      { text: "data: a\r\n\r", complete: true },
      { text: "\ndata: b\n\n", complete: true },
    ]);
  });

  it("passes an event over the bound on in incomplete pieces without holding it", () => {
    const pieces = frame(12, "data: 0123456", "789abcdef\n", "\ndata: ok\n\n");
    expect(pieces.map((piece) => piece.text).join("")).toBe("data: 0123456789abcdef\n\ndata: ok\n\n");
    expect(pieces.filter((piece) => piece.complete)).toEqual([{ text: "data: ok\n\n", complete: true }]);
  });
});

/** The framer as first written, a JS step per byte: what the native line search must equal. */
function referenceFrame(max: number, chunks: readonly Buffer[]): string[] {
  const out: string[] = [];
  let pending = Buffer.alloc(0);
  let lineLength = 0;
  let afterCr = false;
  let overflowing = false;
  const take = (tail: Buffer, terminated: boolean) => {
    const bytes = Buffer.concat([pending, tail]);
    out.push(`${terminated && !overflowing && bytes.length <= max ? "+" : "-"}${bytes.toString("latin1")}`);
    pending = Buffer.alloc(0);
    overflowing = false;
  };
  for (const chunk of chunks) {
    let eventStart = 0;
    for (let index = 0; index < chunk.length; index += 1) {
      const byte = chunk[index] as number;
      if (byte === 0x0a && afterCr) {
        afterCr = false;
        continue;
      }
      if (byte !== 0x0a && byte !== 0x0d) {
        afterCr = false;
        lineLength += 1;
        continue;
      }
      afterCr = byte === 0x0d;
      if (lineLength > 0) {
        lineLength = 0;
        continue;
      }
      let end = index + 1;
      if (byte === 0x0d && chunk[end] === 0x0a) {
        end += 1;
        index += 1;
        afterCr = false;
      }
      take(chunk.subarray(eventStart, end), true);
      eventStart = end;
    }
    if (eventStart < chunk.length) {
      pending = Buffer.concat([pending, chunk.subarray(eventStart)]);
      if (pending.length > max) {
        out.push(`-${pending.toString("latin1")}`);
        pending = Buffer.alloc(0);
        overflowing = true;
      }
    }
  }
  if (pending.length > 0) take(Buffer.alloc(0), false);
  return out;
}

describe("SseFramer against the byte-by-byte reference", () => {
  it("frames generated streams split anywhere exactly as the reference does", () => {
    let seed = 2026_12_04;
    const next = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const parts = ["data: x", "event: e", ": c", "\n", "\r", "\r\n", "\n\n", "\r\r", "\r\n\r\n", "abc", ""];
    for (let round = 0; round < 2_000; round += 1) {
      const text = Array.from({ length: 1 + next(12) }, () => parts[next(parts.length)]).join("");
      const bytes = Buffer.from(text, "latin1");
      const chunks: Buffer[] = [];
      for (let at = 0; at < bytes.length; ) {
        const size = 1 + next(6);
        chunks.push(bytes.subarray(at, at + size));
        at += size;
      }
      const max = 4 + next(20);
      const framer = new SseFramer(max);
      const pieces = [...chunks.flatMap((chunk) => framer.push(chunk)), ...framer.end()].map(
        (piece) => `${piece.complete ? "+" : "-"}${piece.bytes.toString("latin1")}`,
      );
      expect(pieces, JSON.stringify(text)).toEqual(referenceFrame(max, chunks));
    }
  });
});

describe("parseSseEvent", () => {
  it("reads the event name and joins data lines; comments and other fields are skipped", () => {
    expect(parseSseEvent(Buffer.from(': hi\nevent: message_start\nid: 3\ndata: {"a":\ndata:1}\n\n'))).toEqual({
      event: "message_start",
      data: '{"a":\n1}',
      dataLines: 2,
    });
    expect(parseSseEvent(Buffer.from("retry: 10\n\n"))).toEqual({ event: "", data: null, dataLines: 0 });
  });
});
