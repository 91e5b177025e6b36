import { status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { describeServiceCallError, ServiceCallError } from "./service-error";

function failure(code: number, details: string, method = "ListCollapses") {
  return new ServiceCallError({
    service: "cache-monitor",
    address: "127.0.0.1:50054",
    method,
    code,
    details,
    timeoutMs: 5_000,
  });
}

describe("describeServiceCallError", () => {
  it("tells the operator an unreachable service may not be running, with the channel's detail trimmed", () => {
    const text = describeServiceCallError(
      failure(
        status.UNAVAILABLE,
        "No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:50054. Resolution note: ",
      ),
    );
    expect(text).toBe(
      "cache-monitor is not reachable at 127.0.0.1:50054 (UNAVAILABLE): is it running? (`make run` starts it)\n" +
        "  detail: No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:50054.",
    );
  });

  it("names the deadline and the flag that raises it", () => {
    expect(describeServiceCallError(failure(status.DEADLINE_EXCEEDED, "Deadline exceeded"))).toBe(
      "cache-monitor at 127.0.0.1:50054 did not answer ListCollapses within 5s (DEADLINE_EXCEEDED): is it overloaded or stuck? --timeout waits longer",
    );
  });

  it("prints the server's own message for INVALID_ARGUMENT and NOT_FOUND", () => {
    expect(describeServiceCallError(failure(status.INVALID_ARGUMENT, "session_id: must not be empty"))).toBe(
      "cache-monitor rejected ListCollapses (INVALID_ARGUMENT): session_id: must not be empty",
    );
    expect(describeServiceCallError(failure(status.NOT_FOUND, "session 999 has no builds", "TraceSession"))).toBe(
      "cache-monitor: session 999 has no builds (NOT_FOUND)",
    );
  });

  it("suspects an older build when the method is not implemented", () => {
    expect(describeServiceCallError(failure(status.UNIMPLEMENTED, "", "TraceSession"))).toContain(
      "does not implement TraceSession (UNIMPLEMENTED)",
    );
  });

  it("falls back to the status name and the server's message", () => {
    expect(describeServiceCallError(failure(status.INTERNAL, "internal error"))).toBe(
      "cache-monitor ListCollapses failed (INTERNAL): internal error",
    );
  });
});
