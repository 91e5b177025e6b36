import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import {
  createKafkaBus,
  type MessageBus,
  mysqlRelayLeases,
  mysqlRelayLock,
  OutboxRelay,
  RELAY_PUBLISHER_HEADER,
  relayLeaseSlot,
  relayLockFor,
} from "@prefix-guard/bus";
import { eventually, testKafkaBrokers, uniqueName } from "@prefix-guard/bus/testing";
import { createDatabase, runMigrations } from "@prefix-guard/db";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { decodeSessionEvent } from "@prefix-guard/events";
import { silentLogger } from "@prefix-guard/logging";
import { sessionEventsMigrations } from "@prefix-guard/migrations/session-events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionEventOutboxSource } from "../src/adapters/mysql/session-event-outbox";
import { commandsFor, writeSessions } from "./support";

/** Collects what arrives on a topic: per session, the seqs and their publishers in arrival order. */
async function collect(bus: MessageBus, topic: string) {
  const seqs = new Map<string, number[]>();
  const publishers = new Map<string, string[]>();
  let total = 0;
  const sub = await bus.subscribe({
    topic,
    groupId: uniqueName("observer"),
    handleMessage: async (m) => {
      const event = decodeSessionEvent(m.value);
      expect(m.key).toBe(event.sessionId);
      seqs.set(event.sessionId, [...(seqs.get(event.sessionId) ?? []), event.seq]);
      publishers.set(event.sessionId, [
        ...(publishers.get(event.sessionId) ?? []),
        m.headers[RELAY_PUBLISHER_HEADER] ?? "(none)",
      ]);
      total += 1;
    },
  });
  return { seqs, publishers, total: () => total, stop: () => sub.stop() };
}

function unpublished(db: TestDatabase["db"]): Promise<number> {
  return db("session_event")
    .whereNull("published_at_ms")
    .count({ n: "*" })
    .first()
    .then((r) => Number(r?.n ?? 0));
}

describe("session-events relay on real MariaDB and Kafka", () => {
  let database: TestDatabase;
  let bus: MessageBus;
  beforeAll(async () => {
    database = await createTestDatabase("se_relay");
    await runMigrations(database.db, sessionEventsMigrations);
    bus = createKafkaBus({ brokers: testKafkaBrokers, clientId: "relay-test", logger: silentLogger() });
  });
  afterAll(async () => {
    await bus.close();
    await database.drop();
  });

  it("delivers 100 concurrently written sessions in per-session seq order with no gaps", async () => {
    const topic = uniqueName("se-order");
    await bus.ensureTopics([{ topic, partitions: 6 }]);
    const ids = await writeSessions(commandsFor(database.db), "order", 100, 10);
    const relay = new OutboxRelay({
      source: sessionEventOutboxSource(database.db, topic),
      bus,
      lock: relayLockFor(database.db, topic),
      logger: silentLogger(),
      batchSize: 200,
    });
    const seen = await collect(bus, topic);
    relay.start();
    await eventually(() => seen.total() >= 1_100, { what: "1,100 events", timeoutMs: 60_000 });
    await relay.stop();
    await seen.stop();
    for (const id of ids) expect(seen.seqs.get(id)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    expect(await unpublished(database.db)).toBe(0);
  });

  it("splits the event store over 4 leases between two relays: each session from one of them, in seq order", async () => {
    const topic = uniqueName("se-leases");
    await bus.ensureTopics([{ topic, partitions: 6 }]);
    const purpose = uniqueName("leases");
    // Two replicas: each its own connections, lock connection included.
    const replicas = [createDatabase(database.url), createDatabase(database.url)];
    const relays = replicas.map(
      (db, replica) =>
        new OutboxRelay({
          source: sessionEventOutboxSource(db, topic),
          bus,
          leases: mysqlRelayLeases(db, purpose, database.name, 4, { membershipRefreshMs: 100 }),
          logger: silentLogger(),
          publisherId: `replica-${replica}`,
          idleDelayMs: 20,
          errorDelayMs: 100,
        }),
    );
    const seen = await collect(bus, topic);
    try {
      for (const relay of relays) relay.start();
      await eventually(() => relays.every((relay) => relay.leasesHeld() === 2), {
        what: "2 leases each",
        timeoutMs: 10_000,
      });
      const ids = await writeSessions(commandsFor(database.db), "leases", 60, 10);
      await eventually(() => seen.total() >= 60 * 11, { what: "660 events", timeoutMs: 60_000 });
      // Each event stored with its session's slot, so a lease's holder reads its own sessions by index.
      const slots = (await database
        .db("session_event")
        .whereIn("session_id", ids)
        .distinct("session_id", "lease_slot")) as Array<{
        session_id: string;
        lease_slot: number;
      }>;
      expect(slots).toHaveLength(ids.length);
      for (const row of slots) expect(Number(row.lease_slot)).toBe(relayLeaseSlot(row.session_id));
      for (const id of ids) {
        expect(seen.seqs.get(id)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
        expect(new Set(seen.publishers.get(id)).size, id).toBe(1);
      }
      const publishedBy = new Set(ids.map((id) => seen.publishers.get(id)?.[0]));
      expect([...publishedBy].sort()).toEqual(["replica-0", "replica-1"]);
      expect(seen.total()).toBe(60 * 11);
    } finally {
      await Promise.all(relays.map((relay) => relay.stop()));
      await seen.stop();
      for (const db of replicas) await db.destroy();
    }
  });

  it("loses nothing when the relay process is SIGKILLed mid-batch and restarted", async () => {
    const topic = uniqueName("se-kill");
    await bus.ensureTopics([{ topic, partitions: 3 }]);
    const ids = await writeSessions(commandsFor(database.db), "kill", 40, 49);
    const expected = ids.length * 50;
    const seen = await collect(bus, topic);
    const start = (pauseAfterPublishMs: number): ChildProcess =>
      spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "fixtures/relay-process.ts")], {
        env: {
          ...process.env,
          DATABASE_URL: database.url,
          KAFKA_BROKERS: testKafkaBrokers.join(","),
          TOPIC: topic,
          BATCH: "25",
          PAUSE_AFTER_PUBLISH_MS: String(pauseAfterPublishMs),
        },
        stdio: "ignore",
      });
    const first = start(400);
    await eventually(() => seen.total() >= 100, { what: "the first relay to publish", timeoutMs: 60_000 });
    first.kill("SIGKILL");
    await new Promise((resolve) => first.once("exit", resolve));
    const leftAfterKill = await unpublished(database.db);
    expect(leftAfterKill).toBeGreaterThan(0);
    const second = start(0);
    await eventually(async () => (await unpublished(database.db)) === 0, {
      what: "the restarted relay to drain",
      timeoutMs: 90_000,
    });
    await eventually(() => ids.every((id) => new Set(seen.seqs.get(id)).size === 50), {
      what: "every event on Kafka",
      timeoutMs: 60_000,
    });
    second.kill("SIGTERM");
    await seen.stop();
    let duplicates = 0;
    for (const id of ids) {
      const arrived = seen.seqs.get(id) ?? [];
      duplicates += arrived.length - new Set(arrived).size;
      expect([...new Set(arrived)].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
      // Duplicates only ever replay a suffix: first arrivals are still in seq order.
      const firstArrivals = arrived.filter((seq, i) => arrived.indexOf(seq) === i);
      expect(firstArrivals).toEqual([...firstArrivals].sort((a, b) => a - b));
    }
    process.stdout.write(
      `relay SIGKILL: ${expected} events, ${leftAfterKill} unpublished at kill, ${duplicates} duplicates, 0 lost\n`,
    );
  });

  it("keeps exactly one active relay per database (GET_LOCK)", async () => {
    const name = uniqueName("lock");
    const a = mysqlRelayLock(database.db, name);
    const b = mysqlRelayLock(database.db, name);
    expect(await a.tryAcquire()).toBe(true);
    expect(await a.tryAcquire()).toBe(true);
    expect(await b.tryAcquire()).toBe(false);
    await a.release();
    expect(await b.tryAcquire()).toBe(true);
    expect(await a.tryAcquire()).toBe(false);
    await b.release();
  });

  it("hands the lock over when the holder's connection dies, and the old holder sees it lost it", async () => {
    const name = uniqueName("lock");
    const a = mysqlRelayLock(database.db, name);
    const b = mysqlRelayLock(database.db, name);
    expect(await a.tryAcquire()).toBe(true);
    // The holder dies (SIGKILL, a network cut): the server drops its connection and frees the lock.
    const [rows] = (await database.db.raw("SELECT IS_USED_LOCK(?) AS holder", [name])) as [Array<{ holder: number }>];
    await database.db.raw(`KILL ${Number(rows[0]?.holder)}`);
    await eventually(() => b.tryAcquire(), { what: "the other relay takes the lock" });
    // The old holder checks before each batch, so it stops publishing instead of racing the new one.
    expect(await a.tryAcquire()).toBe(false);
    await b.release();
    expect(await a.tryAcquire()).toBe(true);
    await a.release();
  });
});
