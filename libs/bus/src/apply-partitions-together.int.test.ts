// runEventConsumer's applyPartitionsTogether against a real broker: the batches of several partitions
// handed over together reach `apply` in one call, every event is applied once and in its key's
// order, and a poison event still goes to the DLQ alone while its partition-mates are applied.
import { decodeSessionEvent } from "@prefix-guard/events";
import { silentLogger } from "@prefix-guard/logging";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { afterAll, describe, expect, it } from "vitest";
import { messageSaved } from "./bus-contract";
import { PoisonMessageError, runEventConsumer } from "./event-consumer";
import { createKafkaBus } from "./kafka-bus";
import type { IncomingMessage } from "./port";
import { eventually, testKafkaBrokers, uniqueName } from "./testing";

const bus = createKafkaBus({ brokers: testKafkaBrokers, clientId: "apply-together", logger: silentLogger() });
afterAll(() => bus.close());

async function publishedTopic(name: string, keys: readonly string[], seqs: number) {
  const topic = uniqueName(name);
  await bus.ensureTopics([
    { topic, partitions: 3 },
    { topic: `${topic}.dlq`, partitions: 1 },
  ]);
  const messages = [];
  for (let seq = 1; seq <= seqs; seq++) for (const key of keys) messages.push({ key, value: messageSaved(key, seq) });
  await bus.publish(topic, messages);
  return topic;
}

/** A consumer of `topic` over its 3 partitions, applying them together. */
function consumeTogether(
  topic: string,
  apply: (events: readonly SessionEvent[], messages: readonly IncomingMessage[]) => Promise<void>,
) {
  return runEventConsumer({
    bus,
    topic,
    groupId: uniqueName("g"),
    logger: silentLogger(),
    decode: decodeSessionEvent,
    partitionsConcurrently: 3,
    maxBatchEvents: 500,
    applyPartitionsTogether: true,
    apply,
  });
}

describe("applyPartitionsTogether over real Kafka", () => {
  it("applies the partitions' batches in shared calls, each event once and in its key's order", async () => {
    const keys = Array.from({ length: 12 }, (_, i) => `together-${i}`);
    const topic = await publishedTopic("apply-together", keys, 60);
    const seen = new Map<string, number[]>();
    const partitionsPerCall: number[] = [];
    const sub = await consumeTogether(topic, async (events, messages) => {
      partitionsPerCall.push(new Set(messages.map((m) => m.partition)).size);
      expect(events.length).toBeLessThanOrEqual(500);
      // As long as a transaction: the other partitions' batches arrive while this one is applied.
      await new Promise((resolve) => setTimeout(resolve, 20));
      for (const event of events) seen.set(event.sessionId, [...(seen.get(event.sessionId) ?? []), event.seq]);
    });
    await eventually(() => [...seen.values()].reduce((n, l) => n + l.length, 0) >= keys.length * 60, {
      what: "every event applied",
      timeoutMs: 60_000,
    });
    await sub.stop();
    for (const key of keys) expect(seen.get(key)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    // The keys spread over the three partitions, and some call carried more than one of them.
    expect(Math.max(...partitionsPerCall)).toBeGreaterThan(1);
  });

  it("dead-letters only the poison event; the batches it was grouped with are applied", async () => {
    const keys = Array.from({ length: 6 }, (_, i) => `poison-${i}`);
    const topic = await publishedTopic("apply-together-poison", keys, 5);
    const poisonKey = keys[2] as string;
    const applied: string[] = [];
    const sub = await consumeTogether(topic, async (events) => {
      if (events.some((e) => e.sessionId === poisonKey && e.seq === 3))
        throw new PoisonMessageError("seq 3 of this session can never be applied");
      applied.push(...events.map((e) => `${e.sessionId}#${e.seq}`));
    });
    const dead: IncomingMessage[] = [];
    const dlq = await bus.subscribe({
      topic: `${topic}.dlq`,
      groupId: uniqueName("g"),
      handleMessage: async (m) => void dead.push(m),
    });
    await eventually(() => applied.length >= keys.length * 5 - 1 && dead.length >= 1, {
      what: "all but one applied, one dead-lettered",
      timeoutMs: 60_000,
    });
    await Promise.all([sub.stop(), dlq.stop()]);
    expect(dead.map((m) => decodeSessionEvent(m.value)).map((e) => `${e.sessionId}#${e.seq}`)).toEqual([
      `${poisonKey}#3`,
    ]);
    expect(new Set(applied).size).toBe(applied.length);
    expect(applied).not.toContain(`${poisonKey}#3`);
    expect(applied).toHaveLength(keys.length * 5 - 1);
  });
});
