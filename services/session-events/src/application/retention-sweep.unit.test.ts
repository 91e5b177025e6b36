import { silentLogger } from "@prefix-guard/logging";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { RetentionSweep, type SweepCommands, type SweepStore } from "./retention-sweep";

const DAY_MS = 86_400_000;

/** A store of idle and deleted-but-unerased sessions, and commands that erase them from it. */
function fakes(idle: string[], leftovers: string[] = []) {
  const calls = { idle: 0, leftovers: 0, expired: [] as string[], erased: [] as string[] };
  const store: SweepStore = {
    idleSessions: async (_cutoff, limit) => {
      calls.idle += 1;
      return idle.slice(0, limit);
    },
    unerasedDeletedSessions: async (limit) => {
      calls.leftovers += 1;
      return leftovers.slice(0, limit);
    },
  };
  const commands: SweepCommands = {
    expireSession: async (sessionId) => {
      if (sessionId.startsWith("broken")) throw new Error("disk on fire");
      idle.splice(idle.indexOf(sessionId), 1);
      calls.expired.push(sessionId);
      return true;
    },
    eraseDeletedSession: async (sessionId) => {
      leftovers.splice(leftovers.indexOf(sessionId), 1);
      calls.erased.push(sessionId);
      return true;
    },
  };
  return { store, commands, calls };
}

describe("RetentionSweep", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const sweep = (f: ReturnType<typeof fakes>, retentionDays: number, afterErase = () => {}) =>
    new RetentionSweep({
      commands: f.commands,
      store: f.store,
      logger: silentLogger(),
      now: () => 1_000 * DAY_MS,
      retentionDays,
      intervalMs: 1_000,
      batchSize: 2,
      afterErase,
    });

  it("erases leftovers once at start, then idle sessions every interval until stopped", async () => {
    const f = fakes(["a", "b", "c"], ["old"]);
    let nudges = 0;
    const retention = sweep(f, 30, () => {
      nudges += 1;
    });
    retention.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.calls.erased).toEqual(["old"]);
    expect(f.calls.expired).toEqual(["a", "b", "c"]);
    // Each batch that erased something nudged the relay (leftovers, then two batches of idle ones).
    expect(nudges).toBe(3);
    const listed = f.calls.idle;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(f.calls.idle).toBe(listed + 1);
    expect(f.calls.leftovers).toBe(1);
    await retention.stop();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(f.calls.idle).toBe(listed + 1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("with retention off, runs only the start-up erasure and sets no timer", async () => {
    const f = fakes(["a"], ["old"]);
    const retention = sweep(f, 0);
    retention.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.calls).toMatchObject({ idle: 0, expired: [], erased: ["old"] });
    expect(vi.getTimerCount()).toBe(0);
    await retention.stop();
  });

  it("keeps going past a session whose erasure fails, and counts it", async () => {
    const f = fakes(["broken-1", "a", "b"]);
    const result = await sweep(f, 30).runOnce();
    expect(result).toEqual({ expired: 2, leftovers: 0, failed: 1 });
    expect(f.calls.expired).toEqual(["a", "b"]);
  });
});
