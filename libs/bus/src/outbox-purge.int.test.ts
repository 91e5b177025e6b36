// Published outbox rows are deleted OUTBOX_RETENTION_MS after publication, in batches, at most once
// per purge interval, by the relay that holds the lock; unpublished rows and a source that keeps its
// rows (session-events' event store) are never touched. A fake clock on SQLite and MariaDB.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { createTestDatabase } from "@prefix-guard/db/testing";
import { silentLogger } from "@prefix-guard/logging";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  enqueueOutboxMessages,
  OutboxRelay,
  type OutboxSource,
  outboxMessageLeaseSlot,
  outboxMessageTable,
  tableOutboxSource,
} from "./outbox";
import type { MessageBus } from "./port";
import { processRelayLock } from "./relay-locks";
import { eventually } from "./testing";

const HOUR_MS = 3600 * 1000;
const T0 = Date.UTC(2026, 9, 12, 9, 0);

const nullBus: MessageBus = {
  kind: "embedded",
  ensureTopics: async () => undefined,
  publish: async () => undefined,
  subscribe: async () => ({ stop: async () => undefined }),
  close: async () => undefined,
};

const STORES: readonly { name: string; open: () => Promise<{ db: Database; close: () => Promise<void> }> }[] = [
  {
    name: "SQLite",
    open: async () => {
      const directory = mkdtempSync(join(tmpdir(), "pg-outbox-purge-"));
      const db = createDatabase(`sqlite:${join(directory, "outbox.sqlite")}`);
      return {
        db,
        close: async () => {
          await db.destroy();
          rmSync(directory, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: "MariaDB",
    open: async () => {
      const test = await createTestDatabase("outbox_purge");
      return { db: test.db, close: () => test.drop() };
    },
  },
];

describe.each(STORES)("outbox purge on $name", ({ open }) => {
  let db: Database;
  let close: () => Promise<void>;
  let nowMs = T0;

  beforeAll(async () => {
    ({ db, close } = await open());
    await runMigrations(db, [outboxMessageTable, outboxMessageLeaseSlot]);
  });
  afterAll(async () => close());
  beforeEach(async () => {
    await db("outbox_message").delete();
    nowMs = T0;
  });

  /** `n` rows enqueued now; `publishedAtMs` set on them unless null. */
  async function rows(n: number, publishedAtMs: number | null): Promise<void> {
    const entries = Array.from({ length: n }, (_, i) => ({
      topic: "prompt.prefix.v1",
      key: `s${i}`,
      value: new Uint8Array([1, 2, 3]),
      nowMs,
    }));
    for (let start = 0; start < entries.length; start += 500) {
      await db.transaction((trx) => enqueueOutboxMessages(trx, entries.slice(start, start + 500)));
    }
    if (publishedAtMs !== null) {
      await db("outbox_message").whereNull("published_at_ms").update({ published_at_ms: publishedAtMs });
    }
  }

  async function counts(): Promise<{ published: number; pending: number }> {
    const published = await db("outbox_message").whereNotNull("published_at_ms").count({ n: "*" }).first();
    const pending = await db("outbox_message").whereNull("published_at_ms").count({ n: "*" }).first();
    return { published: Number(published?.n ?? 0), pending: Number(pending?.n ?? 0) };
  }

  /** The table source, counting its purge statements. */
  function countingSource(): OutboxSource & { purges: number[] } {
    const source = tableOutboxSource(db);
    const purges: number[] = [];
    return {
      ...source,
      purges,
      purgePublished: async (before, limit) => {
        const removed = (await source.purgePublished?.(before, limit)) ?? 0;
        purges.push(removed);
        return removed;
      },
    };
  }

  function relay(source: OutboxSource, options: { purgeMaxBatches?: number } = {}) {
    return new OutboxRelay({
      source,
      bus: nullBus,
      lock: processRelayLock(),
      logger: silentLogger(),
      now: () => nowMs,
      retentionMs: 24 * HOUR_MS,
      purgeIntervalMs: 60_000,
      purgeBatchRows: 1_000,
      ...options,
    });
  }

  it("deletes rows published more than the retention ago, 1,000 per statement, and nothing else", async () => {
    await rows(2_500, T0);
    nowMs = T0 + 2 * HOUR_MS;
    await rows(3, T0 + 2 * HOUR_MS);
    await rows(4, null);
    const source = countingSource();
    const target = relay(source);

    nowMs = T0 + 24 * HOUR_MS;
    expect(await target.purgeIfDue()).toBe(0);
    expect(await counts()).toEqual({ published: 2_503, pending: 4 });

    // Retention passed, but a pass ran a moment ago: not yet.
    nowMs = T0 + 24 * HOUR_MS + 1;
    expect(await target.purgeIfDue()).toBe(0);
    expect(source.purges).toEqual([0]);

    nowMs = T0 + 24 * HOUR_MS + 60_000;
    expect(await target.purgeIfDue()).toBe(2_500);
    expect(source.purges.slice(1)).toEqual([1_000, 1_000, 500]);
    expect(await counts()).toEqual({ published: 3, pending: 4 });

    // Unpublished rows are never purged, however old.
    nowMs = T0 + 400 * HOUR_MS;
    expect(await target.purgeIfDue()).toBe(3);
    expect(await counts()).toEqual({ published: 0, pending: 4 });
  });

  it("bounds one pass by statements, and finishes the backlog at the next intervals", async () => {
    await rows(2_500, T0);
    const source = countingSource();
    const target = relay(source, { purgeMaxBatches: 2 });
    nowMs = T0 + 25 * HOUR_MS;
    expect(await target.purgeIfDue()).toBe(2_000);
    expect(source.purges).toEqual([1_000, 1_000]);
    nowMs += 60_000;
    expect(await target.purgeIfDue()).toBe(500);
    expect((await counts()).published).toBe(0);
  });

  it("never purges a source that keeps its rows (no purgePublished: session-events' event store)", async () => {
    await rows(10, T0);
    const { purgePublished: _kept, ...keeping } = tableOutboxSource(db);
    nowMs = T0 + 100 * HOUR_MS;
    expect(await relay(keeping).purgeIfDue()).toBe(0);
    expect((await counts()).published).toBe(10);
  });

  it("the running relay purges from its loop", async () => {
    await rows(5, T0);
    await rows(2, null);
    nowMs = T0 + 25 * HOUR_MS;
    const running = new OutboxRelay({
      source: tableOutboxSource(db),
      bus: nullBus,
      lock: processRelayLock(),
      logger: silentLogger(),
      now: () => nowMs,
      idleDelayMs: 5,
    });
    running.start();
    try {
      // The two pending rows are published (at 25 h, so kept); the five old ones are purged.
      await eventually(async () => {
        const now = await counts();
        return now.pending === 0 && now.published === 2;
      });
    } finally {
      await running.stop();
    }
  });
});
