// One contract, run against every MessageBus implementation (Kafka and embedded).

import { decodeSessionEvent, encodeSessionEvent, newEventId } from "@prefix-guard/events";
import { silentLogger } from "@prefix-guard/logging";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PoisonMessageError, runEventConsumer } from "./event-consumer";
import type { IncomingMessage, MessageBus } from "./port";
import { eventually, uniqueName } from "./testing";

/** A MessageSaved event of `sessionId` at `seq`, encoded as session-events publishes it. */
export function messageSaved(sessionId: string, seq: number) {
  return encodeSessionEvent({
    eventId: newEventId(),
    sessionId,
    seq,
    occurredAtMs: 1_760_284_200_000 + seq,
    schemaVersion: 1,
    type: "MessageSaved",
    payload: {
      $case: "messageSaved",
      value: {
        messageId: `${sessionId}-m${seq}`,
        role: Role.ROLE_USER,
        content: [{ part: { $case: "text", value: { text: `turn ${seq}` } } }],
        thinkingChars: 0,
        localDate: "2026-10-12",
      },
    },
  });
}

export function busContract(name: string, open: () => Promise<{ bus: MessageBus; close: () => Promise<void> }>) {
  describe(`bus contract: ${name}`, () => {
    let bus: MessageBus;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ bus, close } = await open());
    });
    afterAll(async () => close());

    it("a produced envelope comes back decoded", async () => {
      const topic = uniqueName("contract-roundtrip");
      await bus.ensureTopics([{ topic, partitions: 3 }]);
      await bus.publish(topic, [
        {
          key: "811",
          value: messageSaved("811", 1),
          headers: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" },
        },
      ]);
      const received: IncomingMessage[] = [];
      const sub = await bus.subscribe({
        topic,
        groupId: uniqueName("g"),
        handleMessage: async (m) => void received.push(m),
      });
      await eventually(() => received.length === 1, { what: "one message" });
      await sub.stop();
      const event = decodeSessionEvent(received[0]!.value);
      expect(event.sessionId).toBe("811");
      expect(event.payload.$case).toBe("messageSaved");
      expect(received[0]!.key).toBe("811");
      expect(received[0]!.headers.traceparent).toBe("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    });

    it("keeps per-key order over 1,000 events across several partitions", async () => {
      const topic = uniqueName("contract-order");
      await bus.ensureTopics([{ topic, partitions: 3 }]);
      const keys = Array.from({ length: 20 }, (_, i) => `session-${i}`);
      const batch = [];
      for (let seq = 1; seq <= 50; seq++) for (const key of keys) batch.push({ key, value: messageSaved(key, seq) });
      for (let i = 0; i < batch.length; i += 100) await bus.publish(topic, batch.slice(i, i + 100));
      const seen = new Map<string, number[]>();
      const partitions = new Set<number>();
      const sub = await bus.subscribe({
        topic,
        groupId: uniqueName("g"),
        handleMessage: async (m) => {
          const event = decodeSessionEvent(m.value);
          partitions.add(m.partition);
          seen.set(event.sessionId, [...(seen.get(event.sessionId) ?? []), event.seq]);
        },
      });
      await eventually(() => [...seen.values()].reduce((n, l) => n + l.length, 0) >= 1_000, {
        what: "1,000 events",
        timeoutMs: 60_000,
      });
      await sub.stop();
      expect(partitions.size).toBeGreaterThan(1);
      for (const key of keys) expect(seen.get(key)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    });

    it("resumes a group from its committed position after a restart", async () => {
      const topic = uniqueName("contract-resume");
      const groupId = uniqueName("g");
      await bus.ensureTopics([{ topic, partitions: 1 }]);
      await bus.publish(
        topic,
        [1, 2, 3].map((seq) => ({ key: "s", value: messageSaved("s", seq) })),
      );
      const first: number[] = [];
      const sub1 = await bus.subscribe({
        topic,
        groupId,
        handleMessage: async (m) => void first.push(decodeSessionEvent(m.value).seq),
      });
      await eventually(() => first.length === 3, { what: "first three" });
      await sub1.stop();
      await bus.publish(
        topic,
        [4, 5].map((seq) => ({ key: "s", value: messageSaved("s", seq) })),
      );
      const second: number[] = [];
      const sub2 = await bus.subscribe({
        topic,
        groupId,
        handleMessage: async (m) => void second.push(decodeSessionEvent(m.value).seq),
      });
      await eventually(() => second.includes(5), { what: "seq 5 after restart" });
      await sub2.stop();
      expect(first).toEqual([1, 2, 3]);
      expect(second).toEqual([4, 5]);
    });

    it("retries a failing handler on the same message instead of skipping it", async () => {
      const topic = uniqueName("contract-retry");
      await bus.ensureTopics([{ topic, partitions: 1 }]);
      await bus.publish(
        topic,
        [1, 2].map((seq) => ({ key: "s", value: messageSaved("s", seq) })),
      );
      const attempts: number[] = [];
      let failuresLeft = 2;
      const sub = await bus.subscribe({
        topic,
        groupId: uniqueName("g"),
        handleMessage: async (m) => {
          const seq = decodeSessionEvent(m.value).seq;
          attempts.push(seq);
          if (seq === 1 && failuresLeft-- > 0) throw new Error("dependency down");
        },
      });
      await eventually(() => attempts.includes(2), { what: "seq 2" });
      await sub.stop();
      expect(attempts).toEqual([1, 1, 1, 2]);
    });

    it("sends a malformed envelope to <topic>.dlq and keeps consuming", async () => {
      const topic = uniqueName("contract-dlq");
      await bus.ensureTopics([
        { topic, partitions: 1 },
        { topic: `${topic}.dlq`, partitions: 1 },
      ]);
      await bus.publish(topic, [
        { key: "s", value: messageSaved("s", 1) },
        { key: "s", value: new Uint8Array([0x0a, 0xff, 0xff, 0xff]) },
        { key: "s", value: messageSaved("s", 2) },
      ]);
      const applied: number[] = [];
      const sub = await runEventConsumer({
        bus,
        topic,
        groupId: uniqueName("g"),
        logger: silentLogger(),
        decode: decodeSessionEvent,
        apply: async (events) => void applied.push(...events.map((e) => e.seq)),
      });
      const dead: IncomingMessage[] = [];
      const dlq = await bus.subscribe({
        topic: `${topic}.dlq`,
        groupId: uniqueName("g"),
        handleMessage: async (m) => void dead.push(m),
      });
      await eventually(() => applied.length === 2 && dead.length === 1, { what: "two applied, one dead-lettered" });
      await sub.stop();
      await dlq.stop();
      expect(applied).toEqual([1, 2]);
      expect(dead[0]!.headers["pg-dlq-reason"]).toBe("undecodable");
      expect(dead[0]!.headers["pg-dlq-source"]).toBe(`${topic}/0/1`);
      expect([...dead[0]!.value]).toEqual([0x0a, 0xff, 0xff, 0xff]);
    });

    it("hands batches of one partition in offset order, several partitions at once, and retries a failed batch whole", async () => {
      const topic = uniqueName("contract-batch");
      await bus.ensureTopics([{ topic, partitions: 3 }]);
      const keys = Array.from({ length: 9 }, (_, i) => `batch-${i}`);
      const messages = [];
      for (let seq = 1; seq <= 40; seq++) for (const key of keys) messages.push({ key, value: messageSaved(key, seq) });
      await bus.publish(topic, messages);
      const seen = new Map<string, number[]>();
      const batchSizes: number[] = [];
      let inFlight = 0;
      let maxInFlight = 0;
      let failOnce = true;
      const sub = await bus.subscribe({
        topic,
        groupId: uniqueName("g"),
        maxBatchMessages: 50,
        partitionsConcurrently: 3,
        handleBatch: async (batch) => {
          inFlight += 1;
          maxInFlight = Math.max(maxInFlight, inFlight);
          try {
            await new Promise((resolve) => setTimeout(resolve, 5));
            if (failOnce && batch.length > 1) {
              failOnce = false;
              throw new Error("dependency down");
            }
            batchSizes.push(batch.length);
            expect(new Set(batch.map((m) => m.partition)).size).toBe(1);
            for (const m of batch) {
              const event = decodeSessionEvent(m.value);
              seen.set(event.sessionId, [...(seen.get(event.sessionId) ?? []), event.seq]);
            }
          } finally {
            inFlight -= 1;
          }
        },
      });
      await eventually(() => [...seen.values()].reduce((n, l) => n + l.length, 0) >= keys.length * 40, {
        what: "every event in batches",
        timeoutMs: 60_000,
      });
      await sub.stop();
      // The failed batch came again: nothing skipped, nothing applied twice.
      for (const key of keys) expect(seen.get(key)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      expect(Math.max(...batchSizes)).toBeGreaterThan(1);
      expect(Math.max(...batchSizes)).toBeLessThanOrEqual(50);
      expect(maxInFlight).toBeGreaterThan(1);
    });

    it("sends only the poison event of a batch to the DLQ and applies the rest", async () => {
      const topic = uniqueName("contract-poison");
      await bus.ensureTopics([
        { topic, partitions: 1 },
        { topic: `${topic}.dlq`, partitions: 1 },
      ]);
      await bus.publish(
        topic,
        [1, 2, 3, 4].map((seq) => ({ key: "p", value: messageSaved("p", seq) })),
      );
      const applied: number[] = [];
      const sub = await runEventConsumer({
        bus,
        topic,
        groupId: uniqueName("g"),
        logger: silentLogger(),
        decode: decodeSessionEvent,
        apply: async (events) => {
          if (events.some((e) => e.seq === 3)) throw new PoisonMessageError("seq 3 can never be applied");
          applied.push(...events.map((e) => e.seq));
        },
      });
      const dead: IncomingMessage[] = [];
      const dlq = await bus.subscribe({
        topic: `${topic}.dlq`,
        groupId: uniqueName("g"),
        handleMessage: async (m) => void dead.push(m),
      });
      await eventually(() => applied.includes(4) && dead.length === 1, { what: "three applied, one dead-lettered" });
      await sub.stop();
      await dlq.stop();
      expect([...new Set(applied)].sort()).toEqual([1, 2, 4]);
      expect(dead[0]?.headers["pg-dlq-reason"]).toBe("poison");
      expect(decodeSessionEvent(dead[0]?.value ?? new Uint8Array()).seq).toBe(3);
    });
  });
}
