import { UnavailableError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { isLockFailure, retryOnDeadlock, translateDbError } from "./db-errors";

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

describe("retryOnDeadlock", () => {
  /** Work that fails with each of `failures` in turn, then answers how many calls it took. */
  function failing(...failures: unknown[]): { work: () => Promise<number>; calls: () => number } {
    let calls = 0;
    return {
      work: async () => {
        calls += 1;
        const failure = failures[calls - 1];
        if (failure !== undefined) throw failure;
        return calls;
      },
      calls: () => calls,
    };
  }

  const deadlock = { errno: 1213, code: "ER_LOCK_DEADLOCK" };

  it("reruns a lock failure, as the driver threw it or behind translateDbError's typed error", async () => {
    expect(isLockFailure(deadlock)).toBe(true);
    const typed = translateDbError(deadlock);
    expect(typed).toBeInstanceOf(UnavailableError);
    expect(await retryOnDeadlock(failing(deadlock, typed).work)).toBe(3);
  });

  it("gives up after `attempts`, throwing the last failure", async () => {
    const work = failing(deadlock, deadlock, deadlock);
    await expect(retryOnDeadlock(work.work, 2)).rejects.toBe(deadlock);
    expect(work.calls()).toBe(2);
  });

  it("throws anything else at once: a duplicate key, a lost connection", async () => {
    for (const failure of [{ errno: 1062, code: "ER_DUP_ENTRY" }, translateDbError({ errno: 2013 })]) {
      const work = failing(failure);
      await expect(retryOnDeadlock(work.work)).rejects.toBe(failure);
      expect(work.calls()).toBe(1);
    }
  });
});
