import { describe, expect, it } from "vitest";
import { isLockFailure } from "./db-errors";

describe("isLockFailure", () => {
  it("is a deadlock or a lock-wait timeout: a rolled-back transaction that may be rerun", () => {
    expect(isLockFailure({ errno: 1213, code: "ER_LOCK_DEADLOCK" })).toBe(true);
    expect(isLockFailure({ errno: 1205, code: "ER_LOCK_WAIT_TIMEOUT" })).toBe(true);
  });

  it("is nothing else: a duplicate key, a lost connection, an error without errno", () => {
    expect(isLockFailure({ errno: 1062, code: "ER_DUP_ENTRY" })).toBe(false);
    expect(isLockFailure({ errno: 2013 })).toBe(false);
    expect(isLockFailure(new Error("Deadlock found when trying to get lock"))).toBe(false);
    expect(isLockFailure(null)).toBe(false);
    expect(isLockFailure("1213")).toBe(false);
  });
});
