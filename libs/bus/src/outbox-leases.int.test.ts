// A relay split over leases (docs/decisions/relay-leases.md) on MariaDB: two relays, each on its own
// connections as two replicas would be, share 4 leases while sessions are written interleaved. Every
// row is published once, each session in write order and by one relay at a time, and both publish;
// when one stops, the other takes its leases. The locks keep replicas of different lease counts (and
// of the single-lock version) off each other's slots.

import { createDatabase, type Database, runMigrations, serverLockName } from "@prefix-guard/db";
import { createMemoryDatabase, createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { silentLogger } from "@prefix-guard/logging";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { relayLeaseSlot } from "./lease-slots";
import {
  enqueueOutboxMessages,
  OutboxRelay,
  outboxMessageLeaseSlot,
  outboxMessageTable,
  RELAY_PUBLISHER_HEADER,
  tableOutboxSource,
} from "./outbox";
import type { MessageBus } from "./port";
import { mysqlRelayLeases, mysqlRelayLock } from "./relay-locks";
import { eventually, uniqueName } from "./testing";

const LEASES = 4;
const TOPIC = "prompt.prefix.v1";

interface Published {
  readonly publisher: string;
  readonly key: string;
  readonly seq: number;
}

function recordingBus(published: Published[]): MessageBus {
  return {
    kind: "embedded",
    ensureTopics: async () => undefined,
    publish: async (_topic, messages) => {
      for (const m of messages)
        published.push({
          publisher: m.headers?.[RELAY_PUBLISHER_HEADER] ?? "(none)",
          key: m.key,
          seq: Number(new TextDecoder().decode(m.value)),
        });
    },
    subscribe: async () => ({ stop: async () => undefined }),
    close: async () => undefined,
  };
}

describe("outbox relay split over leases on MariaDB", () => {
  let test: TestDatabase;
  /** One pool per replica: its lock connection and its reads are its own. */
  const replicaDbs: Database[] = [];

  beforeAll(async () => {
    test = await createTestDatabase("outbox_leases");
    await runMigrations(test.db, [outboxMessageTable, outboxMessageLeaseSlot]);
    replicaDbs.push(createDatabase(test.url), createDatabase(test.url));
  });
  afterAll(async () => {
    for (const db of replicaDbs) await db.destroy();
    await test.drop();
  });

  function relay(replica: 0 | 1, purpose: string, published: Published[]): OutboxRelay {
    const db = replicaDbs[replica] as Database;
    return new OutboxRelay({
      source: tableOutboxSource(db),
      bus: recordingBus(published),
      leases: mysqlRelayLeases(db, purpose, test.name, LEASES, { membershipRefreshMs: 100 }),
      logger: silentLogger(),
      publisherId: `replica-${replica}`,
      batchSize: 40,
      idleDelayMs: 10,
      errorDelayMs: 100,
    });
  }

  /** `sessions` sessions of `events` rows each, written by 8 lanes in single-row transactions, interleaved. */
  async function write(prefix: string, sessions: number, events: number, firstSeq = 0): Promise<string[]> {
    const keys = Array.from({ length: sessions }, (_, s) => `${prefix}-${s}`);
    await Promise.all(
      Array.from({ length: 8 }, async (_, lane) => {
        for (let seq = firstSeq; seq < firstSeq + events; seq++)
          for (let s = lane; s < sessions; s += 8)
            await test.db.transaction((trx) =>
              enqueueOutboxMessages(trx, [
                {
                  topic: TOPIC,
                  key: keys[s] as string,
                  value: new TextEncoder().encode(String(seq)),
                  nowMs: Date.now(),
                },
              ]),
            );
      }),
    );
    return keys;
  }

  async function unpublished(): Promise<number> {
    const row = await test.db("outbox_message").whereNull("published_at_ms").count({ n: "*" }).first();
    return Number(row?.n ?? 0);
  }

  /** Per key: every seq once, ascending, and the publishers in runs (one holder, then maybe another). */
  function check(published: readonly Published[], keys: readonly string[], events: number): void {
    const byKey = new Map<string, Published[]>();
    for (const p of published) byKey.set(p.key, [...(byKey.get(p.key) ?? []), p]);
    for (const key of keys) {
      const list = byKey.get(key) ?? [];
      expect(
        list.map((p) => p.seq),
        key,
      ).toEqual(Array.from({ length: events }, (_, i) => i));
      const runs = list.map((p) => p.publisher).filter((publisher, i, all) => i === 0 || all[i - 1] !== publisher);
      expect(runs.length, `${key}: ${runs.join(" → ")}`).toBeLessThanOrEqual(2);
    }
  }

  it("splits 4 leases between two relays: every row published once, each session in order, both publish", async () => {
    const purpose = uniqueName("split");
    const published: Published[] = [];
    const a = relay(0, purpose, published);
    const b = relay(1, purpose, published);
    a.start();
    try {
      await eventually(() => a.leasesHeld() === LEASES, { what: "the first relay to hold every lease" });
      const first = write("split", 48, 10);
      b.start();
      await eventually(() => a.leasesHeld() === 2 && b.leasesHeld() === 2, {
        what: "the relays to hold 2 leases each",
        timeoutMs: 10_000,
      });
      const keys = await first;
      // Written while the leases are split: both relays publish.
      await write("split", 48, 10, 10);
      await eventually(async () => (await unpublished()) === 0, { what: "every row published", timeoutMs: 30_000 });
      check(published, keys, 20);
      expect(published).toHaveLength(48 * 20);
      const byPublisher = (publisher: string) => published.filter((p) => p.publisher === publisher).length;
      expect(byPublisher("replica-0")).toBeGreaterThan(0);
      expect(byPublisher("replica-1")).toBeGreaterThan(0);
      expect([a.leasesHeld(), b.leasesHeld()]).toEqual([2, 2]);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it("hands a stopped relay's leases to the other mid-flow, still once and in order", async () => {
    const purpose = uniqueName("handover");
    const published: Published[] = [];
    const a = relay(0, purpose, published);
    const b = relay(1, purpose, published);
    a.start();
    b.start();
    try {
      await eventually(() => a.leasesHeld() === 2 && b.leasesHeld() === 2, {
        what: "the relays to hold 2 leases each",
        timeoutMs: 10_000,
      });
      const writing = write("handover", 32, 30);
      await eventually(() => published.filter((p) => p.key.startsWith("handover")).length >= 200, {
        what: "both relays publishing",
      });
      await a.stop();
      await eventually(() => b.leasesHeld() === LEASES, {
        what: "the survivor to hold every lease",
        timeoutMs: 10_000,
      });
      const keys = await writing;
      await eventually(async () => (await unpublished()) === 0, { what: "every row published", timeoutMs: 30_000 });
      const mine = published.filter((p) => p.key.startsWith("handover"));
      check(mine, keys, 30);
      expect(mine).toHaveLength(32 * 30);
      expect(mine.filter((p) => p.publisher === "replica-0").length).toBeGreaterThan(0);
    } finally {
      await b.stop();
    }
  });

  it("keeps replicas with different lease counts, and a single-lock relay, off each other's slots", async () => {
    const purpose = uniqueName("mixed");
    const [dbA, dbB] = replicaDbs as [Database, Database];
    // A replica from before leases holds the one relay lock: lease 0 (which takes that name too) waits.
    const single = mysqlRelayLock(dbA, serverLockName(purpose, test.name));
    const four = mysqlRelayLeases(dbB, purpose, test.name, 4);
    expect(await single.tryAcquire()).toBe(true);
    expect(await four.lock(0).tryAcquire()).toBe(false);
    expect(await four.lock(1).tryAcquire()).toBe(true);
    await single.release();
    // Two leases: lease 1 (odd slots) overlaps four's lease 1 (slots 1, 5, …); lease 0 (even) is free.
    const two = mysqlRelayLeases(dbA, purpose, test.name, 2);
    expect(await two.lock(1).tryAcquire()).toBe(false);
    expect(await two.lock(0).tryAcquire()).toBe(true);
    // Four's lease 2 (slots 2, 6, …) is within two's lease 0 now.
    expect(await four.lock(2).tryAcquire()).toBe(false);
    expect([two.held(), four.held()]).toEqual([1, 1]);
    await two.close();
    expect(await four.lock(2).tryAcquire()).toBe(true);
    await four.close();
  });

  it("lets a replica that lost its lock connection start over, and another take the lease meanwhile", async () => {
    const purpose = uniqueName("killed");
    const [dbA, dbB] = replicaDbs as [Database, Database];
    const a = mysqlRelayLeases(dbA, purpose, test.name, 1);
    const b = mysqlRelayLeases(dbB, purpose, test.name, 1);
    expect(await a.lock(0).tryAcquire()).toBe(true);
    expect(await b.lock(0).tryAcquire()).toBe(false);
    // The holder's connection dies (SIGKILL, a network cut): the server frees every lock it held.
    const [rows] = (await test.db.raw("SELECT IS_USED_LOCK(?) AS holder", [serverLockName(purpose, test.name)])) as [
      Array<{ holder: number }>,
    ];
    await test.db.raw(`KILL ${Number(rows[0]?.holder)}`);
    await eventually(() => b.lock(0).tryAcquire(), { what: "the other replica takes the lease" });
    // The old holder checks before each batch: it finds the lease gone instead of racing the new holder.
    expect(await a.lock(0).tryAcquire()).toBe(false);
    expect(a.held()).toBe(0);
    await b.close();
    expect(await a.lock(0).tryAcquire()).toBe(true);
    await a.close();
  });
});

describe.each([
  { name: "SQLite", open: async () => ({ db: createMemoryDatabase(), drop: async () => undefined }) },
  {
    name: "MariaDB",
    open: async () => {
      const test = await createTestDatabase("outbox_lease_slot");
      return { db: test.db, drop: () => test.drop() };
    },
  },
])("the lease slot migration on $name", ({ open }) => {
  it("stamps unpublished rows written before it with their key's slot; new rows get theirs at insert", async () => {
    const { db, drop } = await open();
    try {
      await runMigrations(db, [outboxMessageTable]);
      const keys = Array.from({ length: 30 }, (_, i) => `before-${i}`);
      await db("outbox_message").insert(
        keys.map((key, i) => ({
          topic: TOPIC,
          message_key: key,
          payload: Buffer.from([i]),
          headers_json: "{}",
          created_at_ms: 1,
          published_at_ms: i % 3 === 0 ? 2 : null,
        })),
      );
      await runMigrations(db, [outboxMessageTable, outboxMessageLeaseSlot]);
      await enqueueOutboxMessages(db, [{ topic: TOPIC, key: "after", value: new Uint8Array([1]), nowMs: 3 }]);
      const rows = (await db("outbox_message").select("message_key", "published_at_ms", "lease_slot")) as Array<{
        message_key: string;
        published_at_ms: number | null;
        lease_slot: number;
      }>;
      expect(rows).toHaveLength(31);
      for (const row of rows)
        expect(Number(row.lease_slot), row.message_key).toBe(
          row.published_at_ms === null ? relayLeaseSlot(row.message_key) : 0,
        );
      expect(rows.filter((row) => Number(row.lease_slot) !== 0).length).toBeGreaterThan(15);
    } finally {
      await drop();
    }
  });
});
