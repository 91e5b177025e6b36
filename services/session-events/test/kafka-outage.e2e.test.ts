// A real broker outage: a dedicated Kafka (its own port and data) is stopped while sessions keep
// writing, then started again; the relay must deliver everything written during the outage.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { createKafkaBus, type MessageBus, OutboxRelay, relayLockFor } from "@prefix-guard/bus";
import { eventually, uniqueName } from "@prefix-guard/bus/testing";
import { runMigrations } from "@prefix-guard/db";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { decodeSessionEvent } from "@prefix-guard/events";
import { silentLogger } from "@prefix-guard/logging";
import { sessionEventsMigrations } from "@prefix-guard/migrations/session-events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionEventOutboxSource } from "../src/adapters/mysql/session-event-outbox";
import { commandsFor, writeSessions } from "./support";

const repo = join(import.meta.dirname, "../../..");
const port = Number(process.env.OUTAGE_KAFKA_PORT ?? "29092");
const kafkaEnv = {
  ...process.env,
  KAFKA_PORT: String(port),
  KAFKA_CONTROLLER_PORT: String(port + 1),
  KAFKA_DATA: join(repo, ".run/kafka-outage"),
};
const kafka = (command: string) =>
  execFileSync("bash", [join(repo, "deploy/kafka/kafka.sh"), command], {
    env: kafkaEnv,
    stdio: "pipe",
    timeout: 120_000,
  });

describe("writes during a Kafka outage", () => {
  let database: TestDatabase;
  let bus: MessageBus;
  beforeAll(async () => {
    kafka("reset");
    kafka("start");
    database = await createTestDatabase("se_outage");
    await runMigrations(database.db, sessionEventsMigrations);
    bus = createKafkaBus({
      brokers: [`127.0.0.1:${port}`],
      clientId: "outage-test",
      logger: silentLogger(),
      connectionTimeoutMs: 1_000,
      requestTimeoutMs: 5_000,
    });
  });
  afterAll(async () => {
    await bus.close();
    kafka("stop");
    await database.drop();
  });

  it("are accepted while the broker is down and delivered after it returns", async () => {
    const topic = uniqueName("se-outage");
    await bus.ensureTopics([{ topic, partitions: 3 }]);
    const commands = commandsFor(database.db);
    const relay = new OutboxRelay({
      source: sessionEventOutboxSource(database.db, topic),
      bus,
      lock: relayLockFor(database.db, topic),
      logger: silentLogger(),
      errorDelayMs: 200,
    });
    relay.start();
    const before = await writeSessions(commands, "before", 5, 4);
    const unpublished = async () =>
      Number((await database.db("session_event").whereNull("published_at_ms").count({ n: "*" }).first())?.n ?? 0);
    await eventually(async () => (await unpublished()) === 0, { what: "pre-outage events published" });

    kafka("stop");
    const during = await writeSessions(commands, "during", 5, 4);
    expect(await unpublished()).toBe(25);
    kafka("start");

    await eventually(async () => (await unpublished()) === 0, { what: "outage backlog published", timeoutMs: 90_000 });
    await relay.stop();
    const seqs = new Map<string, Set<number>>();
    const sub = await bus.subscribe({
      topic,
      groupId: uniqueName("observer"),
      handleMessage: async (m) => {
        const e = decodeSessionEvent(m.value);
        seqs.set(e.sessionId, (seqs.get(e.sessionId) ?? new Set()).add(e.seq));
      },
    });
    await eventually(() => [...before, ...during].every((id) => seqs.get(id)?.size === 5), {
      what: "all 50 events on Kafka",
      timeoutMs: 60_000,
    });
    await sub.stop();
    for (const id of [...before, ...during]) expect([...(seqs.get(id) ?? [])].sort()).toEqual([1, 2, 3, 4, 5]);
  });
});
