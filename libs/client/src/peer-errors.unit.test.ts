import { Metadata, type ServiceError, status } from "@grpc/grpc-js";
import {
  ConflictError,
  FailedPreconditionError,
  NotFoundError,
  UnavailableError,
  ValidationError,
} from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { translateClientError } from "./peer-errors";

function serviceError(code: status, details: string, trailers: Record<string, string> = {}): ServiceError {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(trailers)) metadata.set(key, value);
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata });
}

describe("translateClientError", () => {
  it("rebuilds a ValidationError from pg-field without doubling the field prefix", () => {
    const error = translateClientError(
      serviceError(status.INVALID_ARGUMENT, "tools[1].input_schema_json: is not JSON", {
        "pg-field": "tools[1].input_schema_json",
      }),
      "prompt-assembly",
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe("tools[1].input_schema_json");
    expect(error.message).toBe("tools[1].input_schema_json: is not JSON");
  });

  it("names the whole request when a peer sent INVALID_ARGUMENT without pg-field", () => {
    const error = translateClientError(serviceError(status.INVALID_ARGUMENT, "bad"), "x") as ValidationError;
    expect(error.field).toBe("request");
    expect(error.message).toBe("request: bad");
  });

  it("keeps pg-reason on the typed error and the status as the cause", () => {
    const original = serviceError(status.ABORTED, "generation moved", { "pg-reason": "generation_mismatch" });
    const error = translateClientError(original, "session-events") as ConflictError;
    expect(error).toBeInstanceOf(ConflictError);
    expect(error.reason).toBe("generation_mismatch");
    expect(error.cause).toBe(original);
    expect(translateClientError(serviceError(status.FAILED_PRECONDITION, "ended"), "x")).toBeInstanceOf(
      FailedPreconditionError,
    );
  });

  it("uses translatePeerError for unreachable, timed-out and missing", () => {
    expect(translateClientError(serviceError(status.UNAVAILABLE, "down"), "cache-monitor").message).toContain(
      "cache-monitor unavailable",
    );
    expect(translateClientError(serviceError(status.UNAVAILABLE, "down"), "x")).toBeInstanceOf(UnavailableError);
    expect(translateClientError(serviceError(status.NOT_FOUND, "no session 9"), "x")).toBeInstanceOf(NotFoundError);
  });

  it("passes through what is not a gRPC status", () => {
    const bug = new RangeError("Value is larger than Number.MAX_SAFE_INTEGER");
    expect(translateClientError(bug, "x")).toBe(bug);
  });
});
