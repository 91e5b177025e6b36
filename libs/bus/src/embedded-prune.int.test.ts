// The embedded log is pruned on a timer that lives and dies with the bus, keeps a message at most
// min(topic retention, maxRetentionMs), and leaves none of a pruned message's bytes in the SQLite
// files (secure_delete, then a truncating WAL checkpoint). Time is a fake clock: the bus's `now` and
// vitest's fake setInterval.

import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { silentLogger } from "@prefix-guard/logging";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createEmbeddedBus, embeddedBusMigrations, pruneEmbeddedLog } from "./embedded-bus";
import type { MessageBus } from "./port";

const DAY_MS = 24 * 3600 * 1000;
const T0 = Date.UTC(2026, 9, 12, 9, 0);
const SECRET = "erase-me-0b7f3c: 身份证号 110101199003070000";

describe("embedded log pruning", () => {
  let directory: string;
  let db: Database;
  let bus: MessageBus | undefined;
  let nowMs = T0;

  beforeEach(async () => {
    directory = mkdtempSync(join(tmpdir(), "pg-bus-prune-"));
    db = createDatabase(`sqlite:${join(directory, "bus.sqlite")}`);
    await runMigrations(db, embeddedBusMigrations);
    nowMs = T0;
  });
  afterEach(async () => {
    vi.useRealTimers();
    await bus?.close();
    bus = undefined;
    await db.destroy();
    rmSync(directory, { recursive: true, force: true });
  });

  async function count(topic: string): Promise<number> {
    const row = await db("bus_message").where({ topic }).count({ n: "*" }).first();
    return Number(row?.n ?? 0);
  }

  /** Resolves with what the next scheduled prune removed. */
  function nextPrune(pruned: number[]): Promise<number> {
    const seen = pruned.length;
    return vi.waitFor(
      () => {
        const removed = pruned[seen];
        if (removed === undefined) throw new Error("no prune yet");
        return removed;
      },
      { timeout: 10_000, interval: 5 },
    );
  }

  it("prunes every interval, keeping each message min(topic retention, maxRetentionMs), and stops with the bus", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const pruned: number[] = [];
    bus = createEmbeddedBus({
      db,
      logger: silentLogger(),
      now: () => nowMs,
      pruneIntervalMs: 60_000,
      maxRetentionMs: 7 * DAY_MS,
      onPruned: (removed) => pruned.push(removed),
    });
    await bus.ensureTopics([
      { topic: "short", partitions: 2, retentionMs: DAY_MS },
      { topic: "long", partitions: 3, retentionMs: 30 * DAY_MS },
    ]);
    const messages = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ key: `s${i}`, value: new Uint8Array([i % 256]) }));
    await bus.publish("short", messages(10));
    await bus.publish("long", messages(12));
    expect(vi.getTimerCount()).toBe(1);

    // Not yet an interval: nothing ran.
    vi.advanceTimersByTime(59_999);
    expect(pruned).toEqual([]);

    // A day later: the 1-day topic is past its retention, the 30-day one is not.
    nowMs = T0 + DAY_MS + 1;
    vi.advanceTimersByTime(1);
    expect(await nextPrune(pruned)).toBe(10);
    expect([await count("short"), await count("long")]).toEqual([0, 12]);

    // Past 7 days, maxRetentionMs caps the 30-day topic.
    nowMs = T0 + 7 * DAY_MS - 1;
    vi.advanceTimersByTime(60_000);
    expect(await nextPrune(pruned)).toBe(0);
    nowMs = T0 + 7 * DAY_MS + 1;
    vi.advanceTimersByTime(60_000);
    expect(await nextPrune(pruned)).toBe(12);
    expect(await count("long")).toBe(0);

    await bus.close();
    bus = undefined;
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(10 * 60_000);
    expect(pruned).toHaveLength(3);
  });

  it("does not keep a process alive: the prune timer is unref'd", async () => {
    let timer: ReturnType<typeof setInterval> | undefined;
    const realSetInterval = globalThis.setInterval;
    const spy = vi.spyOn(globalThis, "setInterval").mockImplementation(((handler: () => void, ms: number) => {
      timer = realSetInterval(handler, ms);
      return timer;
    }) as typeof setInterval);
    try {
      bus = createEmbeddedBus({ db, logger: silentLogger(), pruneIntervalMs: 60_000 });
    } finally {
      spy.mockRestore();
    }
    expect(timer?.hasRef()).toBe(false);
  });

  it("deletes in batches, and leaves no byte of a pruned message in the database or WAL files", async () => {
    bus = createEmbeddedBus({ db, logger: silentLogger(), now: () => nowMs, pruneIntervalMs: 0 });
    await bus.ensureTopics([{ topic: "session.events.v1", partitions: 2, retentionMs: 30 * DAY_MS }]);
    const value = new TextEncoder().encode(`${SECRET} `.repeat(20));
    await bus.publish(
      "session.events.v1",
      Array.from({ length: 2_500 }, (_, i) => ({ key: `s${i % 7}`, value })),
    );
    nowMs = T0 + 1_000;
    await bus.publish("session.events.v1", [{ key: "kept", value: new TextEncoder().encode("a newer message") }]);

    const statements: string[] = [];
    const onQuery = (query: { sql: string }) => statements.push(query.sql);
    db.on("query", onQuery);
    const removed = await pruneEmbeddedLog(db, T0 + 1 + 30 * DAY_MS, { batchRows: 1_000 });
    db.off("query", onQuery);
    expect(removed).toBe(2_500);
    expect(await count("session.events.v1")).toBe(1);
    const deletes = statements.filter((sql) => sql.startsWith("delete"));
    // 2,500 rows over 2 partitions, at most 1,000 per statement.
    expect(deletes.length).toBeGreaterThanOrEqual(3);
    expect(deletes.length).toBeLessThanOrEqual(4);

    const secret = Buffer.from(SECRET, "utf8");
    for (const file of ["bus.sqlite", "bus.sqlite-wal"]) {
      const path = join(directory, file);
      if (!existsSync(path)) continue;
      expect(readFileSync(path).includes(secret), `${file} still holds pruned bytes`).toBe(false);
    }
    expect(readFileSync(join(directory, "bus.sqlite")).includes(Buffer.from("a newer message"))).toBe(true);
  });
});
