import { Writable } from "node:stream";
import { INVALID_SPAN_CONTEXT, trace } from "@opentelemetry/api";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "./index";

describe("createLogger", () => {
  afterEach(() => vi.restoreAllMocks());

  it("writes the active span's ids when they are real", async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = createLogger({ service: "test", level: "info", destination });
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    vi.spyOn(trace, "getActiveSpan").mockReturnValue(
      trace.wrapSpanContext({ traceId, spanId: "00f067aa0ba902b7", traceFlags: 1 }),
    );
    logger.info("inside a span");
    await new Promise((resolve) => setImmediate(resolve));
    expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ trace_id: traceId, span_id: "00f067aa0ba902b7" });
  });

  it("writes no all-zero trace_id when no tracing SDK is installed", async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = createLogger({ service: "test", level: "info", destination });
    // What the API hands out when no SDK samples or exports: a span whose ids are all zero.
    vi.spyOn(trace, "getActiveSpan").mockReturnValue(trace.wrapSpanContext(INVALID_SPAN_CONTEXT));
    logger.info({ session_id: "811" }, "inside a span");
    vi.restoreAllMocks();
    logger.info("outside any span");
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      const entry = JSON.parse(line) as Record<string, unknown>;
      expect(entry).not.toHaveProperty("trace_id");
      expect(entry).not.toHaveProperty("span_id");
    }
  });
});
