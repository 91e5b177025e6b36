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
