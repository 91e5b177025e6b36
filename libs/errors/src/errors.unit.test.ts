import { describe, expect, it } from "vitest";
import { ConflictError, InternalError, isPrefixGuardError, unhandledCase, ValidationError } from "./index";

describe("typed errors", () => {
  it("carry a stable code, the field and the cause", () => {
    const cause = new Error("driver said 1062");
    const error = new ValidationError("content[0].text", "must not be empty", { cause });
    expect(error.code).toBe("invalid_argument");
    expect(error.field).toBe("content[0].text");
    expect(error.message).toBe("content[0].text: must not be empty");
    expect(error.cause).toBe(cause);
    expect(error.name).toBe("ValidationError");
    expect(isPrefixGuardError(error)).toBe(true);
  });

  it("keep reason and context", () => {
    const error = new ConflictError("seq moved", { reason: "seq_mismatch", context: { expected: 3, actual: 4 } });
    expect(error.code).toBe("conflict");
    expect(error.reason).toBe("seq_mismatch");
    expect(error.context).toEqual({ expected: 3, actual: 4 });
    expect(isPrefixGuardError(new Error("x"))).toBe(false);
  });
});

describe("unhandledCase", () => {
  it("fails loudly with what was not handled, instead of returning undefined", () => {
    const step = { kind: "fromTheFuture" } as never;
    expect(() => unhandledCase(step, "projection step")).toThrow(
      new InternalError('unhandled projection step: {"kind":"fromTheFuture"}'),
    );
  });
});
