import { PassThrough, Readable, Transform, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ChunkFilterFailed, relayFiltered, relayStreams } from "./relay";

function collector(highWaterMark = 16 * 1024): Writable & { readonly chunks: Buffer[] } {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      setImmediate(callback);
    },
  });
  return Object.assign(sink, { chunks });
}

const relayed = (streams: Parameters<typeof relayStreams>[0]) =>
  new Promise<Error | null>((resolve) => relayStreams(streams, resolve));

describe("relayStreams", () => {
  it("forwards every byte through the stages and reports success once the last stream finished", async () => {
    const pieces = Array.from({ length: 50 }, (_, i) => Buffer.alloc(4096, i));
    const upper = new Transform({ transform: (chunk, _e, callback) => callback(null, chunk) });
    const sink = collector();
    const outcome = await relayed([Readable.from(pieces), upper, sink]);
    expect(outcome).toBeNull();
    expect(sink.writableFinished).toBe(true);
    expect(Buffer.concat(sink.chunks)).toEqual(Buffer.concat(pieces));
  });

  it("pauses the source while the destination's buffer is full", async () => {
    const source = new PassThrough({ highWaterMark: 1024 });
    const sink = new Writable({ highWaterMark: 1024, write: () => undefined });
    const outcome = relayed([source, sink]);
    let accepted = 0;
    while (source.write(Buffer.alloc(512)) && accepted < 1000) accepted++;
    await new Promise((resolve) => setImmediate(resolve));
    // The sink never calls back: pipe stopped reading, so the source filled up and refused more.
    expect(accepted).toBeLessThan(10);
    expect(source.isPaused() || source.readableFlowing === false).toBe(true);
    source.destroy(new Error("stop"));
    expect(await outcome).toBeInstanceOf(Error);
  });

  it("destroys every stream on a stage's failure and reports it once, after their close events", async () => {
    const source = new PassThrough();
    const failing = new Transform({ transform: (_chunk, _e, callback) => callback(new Error("bad chunk")) });
    const sink = collector();
    const closed: string[] = [];
    source.on("close", () => closed.push("source"));
    sink.on("close", () => closed.push("sink"));
    let reports = 0;
    const outcome = new Promise<Error | null>((resolve) =>
      relayStreams([source, failing, sink], (error) => {
        reports += 1;
        resolve(error);
      }),
    );
    source.write("x");
    const error = await outcome;
    expect(error?.message).toBe("bad chunk");
    expect(closed.sort()).toEqual(["sink", "source"]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(reports).toBe(1);
  });

  it("reports a destination closed before its end and destroys the source (the client left)", async () => {
    const source = new PassThrough();
    const sink = collector();
    const outcome = relayed([source, sink]);
    source.write("first");
    sink.destroy();
    const error = await outcome;
    expect((error as { code?: string } | null)?.code).toBe("ERR_STREAM_PREMATURE_CLOSE");
    expect(source.destroyed).toBe(true);
  });
});

const filteredRelay = (source: Readable, filter: Parameters<typeof relayFiltered>[1], sink: Writable) =>
  new Promise<Error | null>((resolve) => relayFiltered(source, filter, sink, resolve));

/** Drops every chunk holding an "x", holds nothing back; "!" at the end. */
const dropX = { transform: (chunk: Buffer) => (chunk.includes("x") ? null : chunk), flush: () => Buffer.from("!") };

describe("relayFiltered", () => {
  it("sends what the filter makes of each chunk, then what it flushes, and reports success at the end", async () => {
    const sink = collector();
    const outcome = await filteredRelay(Readable.from(["a", "x1", "b", "c"].map((t) => Buffer.from(t))), dropX, sink);
    expect(outcome).toBeNull();
    expect(Buffer.concat(sink.chunks).toString()).toBe("abc!");
    expect(sink.writableFinished).toBe(true);
  });

  it("pauses the source while the destination's buffer is full, and resumes on drain", async () => {
    const source = new PassThrough({ highWaterMark: 1024 });
    const held: Array<() => void> = [];
    let open = false;
    let received = 0;
    const sink = new Writable({
      highWaterMark: 1024,
      write: (chunk: Buffer, _encoding, callback) => {
        received += chunk.length;
        if (open) setImmediate(callback);
        else held.push(callback);
      },
    });
    const outcome = filteredRelay(source, dropX, sink);
    let written = 1;
    while (source.write(Buffer.alloc(512, 0x61)) && written < 1000) written++;
    await new Promise((resolve) => setImmediate(resolve));
    // The sink holds its writes: the relay stopped reading, so the source filled up and refused more.
    expect(written).toBeLessThan(10);
    expect(source.isPaused()).toBe(true);
    open = true;
    for (const callback of held.splice(0)) callback();
    source.end();
    // Drained: every byte written reached the sink, then the flush.
    expect(await outcome).toBeNull();
    expect(received).toBe(written * 512 + 1);
  });

  it("destroys both streams when the filter throws, and reports it as the filter's failure, by name only", async () => {
    const source = new PassThrough();
    const sink = collector();
    const outcome = filteredRelay(
      source,
      {
        transform: () => {
          throw new TypeError("secret body bytes");
        },
        flush: () => null,
      },
      sink,
    );
    source.write("a");
    const error = await outcome;
    expect(error).toBeInstanceOf(ChunkFilterFailed);
    expect(error?.message).toBe("TypeError");
    expect(source.destroyed && sink.destroyed).toBe(true);
  });

  it("reports a destination closed before its end and destroys the source (the client left)", async () => {
    const source = new PassThrough();
    const sink = collector();
    const outcome = filteredRelay(source, dropX, sink);
    source.write("first");
    sink.destroy();
    const error = await outcome;
    expect((error as { code?: string } | null)?.code).toBe("ERR_STREAM_PREMATURE_CLOSE");
    expect(source.destroyed).toBe(true);
  });
});
