import { silentLogger } from "@prefix-guard/logging";
import { describe, expect, it } from "vitest";
import { relayLeaseSlot, slotsOfLease } from "./lease-slots";
import { OutboxRelay, type OutboxRow, type OutboxSource, RELAY_PUBLISHER_HEADER } from "./outbox";
import type { MessageBus, OutgoingMessage } from "./port";
import { processRelayLeases, processRelayLock } from "./relay-locks";

function memorySource(
  rows: OutboxRow[],
  failMarkOnce: boolean,
): OutboxSource & { published: Set<number>; fetchedSlots: Array<readonly number[] | undefined> } {
  const published = new Set<number>();
  const fetchedSlots: Array<readonly number[] | undefined> = [];
  let failNext = failMarkOnce;
  return {
    name: "memory",
    published,
    fetchedSlots,
    fetchUnpublished: async (limit, slots) => {
      fetchedSlots.push(slots);
      return rows
        .filter((r) => !published.has(r.id) && (slots === undefined || slots.includes(relayLeaseSlot(r.message.key))))
        .slice(0, limit);
    },
    markPublished: async (ids) => {
      if (failNext) {
        failNext = false;
        throw new Error("process died after publish, before mark");
      }
      for (const id of ids) published.add(id);
    },
    countUnpublished: async () => rows.length - published.size,
  };
}

function memoryBus(sent: Array<{ topic: string; message: OutgoingMessage }>, failures: { left: number }): MessageBus {
  return {
    kind: "embedded",
    ensureTopics: async () => undefined,
    publish: async (topic, messages) => {
      if (failures.left > 0) {
        failures.left -= 1;
        throw new Error("broker down");
      }
      for (const message of messages) sent.push({ topic, message });
    },
    subscribe: async () => ({ stop: async () => undefined }),
    close: async () => undefined,
  };
}

const rows: OutboxRow[] = [1, 2, 3].map((id) => ({
  id,
  topic: "t",
  message: { key: "s", value: new Uint8Array([id]) },
}));

describe("OutboxRelay", () => {
  it("republishes a batch whose mark failed: a duplicate, never a loss", async () => {
    const sent: Array<{ topic: string; message: OutgoingMessage }> = [];
    const source = memorySource(rows, true);
    const relay = new OutboxRelay({
      source,
      bus: memoryBus(sent, { left: 0 }),
      lock: processRelayLock(),
      logger: silentLogger(),
    });
    await expect(relay.drainOnce()).rejects.toThrow("before mark");
    expect(await relay.drainOnce()).toBe(3);
    expect(sent.map((s) => s.message.value[0])).toEqual([1, 2, 3, 1, 2, 3]);
    expect(await source.countUnpublished()).toBe(0);
  });

  it("keeps rows pending while the bus is down and delivers them in order once it is back", async () => {
    const sent: Array<{ topic: string; message: OutgoingMessage }> = [];
    const failures = { left: 3 };
    const source = memorySource(rows, false);
    const relay = new OutboxRelay({
      source,
      bus: memoryBus(sent, failures),
      lock: processRelayLock(),
      logger: silentLogger(),
      errorDelayMs: 1,
    });
    relay.start();
    for (let i = 0; i < 200 && source.published.size < 3; i++) await new Promise((r) => setTimeout(r, 5));
    await relay.stop();
    expect(failures.left).toBe(0);
    expect(sent.map((s) => s.message.value[0])).toEqual([1, 2, 3]);
  });

  it("split over leases, runs a loop per lease reading only its slots, and keeps every key's order", async () => {
    const sent: Array<{ topic: string; message: OutgoingMessage }> = [];
    const keys = Array.from({ length: 40 }, (_, i) => `session-${i}`);
    // Rows of 40 keys interleaved: key k's n-th row has value n.
    const interleaved: OutboxRow[] = Array.from({ length: 400 }, (_, id) => ({
      id,
      topic: "t",
      message: { key: keys[id % 40] ?? "", value: new Uint8Array([Math.floor(id / 40)]) },
    }));
    const source = memorySource(interleaved, false);
    const leases = processRelayLeases(4);
    const relay = new OutboxRelay({
      source,
      bus: memoryBus(sent, { left: 0 }),
      leases,
      logger: silentLogger(),
      batchSize: 7,
      idleDelayMs: 1,
    });
    relay.start();
    for (let i = 0; i < 400 && source.published.size < interleaved.length; i++)
      await new Promise((r) => setTimeout(r, 5));
    expect(relay.leasesHeld()).toBe(4);
    await relay.stop();
    expect(source.published.size).toBe(interleaved.length);
    expect(sent).toHaveLength(interleaved.length);
    for (const key of keys)
      expect(sent.filter((s) => s.message.key === key).map((s) => s.message.value[0])).toEqual([
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
      ]);
    // Every fetch asked for one lease's slots, and each lease's were asked for.
    const leaseSlots = [0, 1, 2, 3].map((lease) => String(slotsOfLease(lease, 4)));
    expect(new Set(source.fetchedSlots.map(String))).toEqual(new Set(leaseSlots));
    expect(relay.leasesHeld()).toBe(0);
  });

  it("with one lease reads the whole source, as the single-lock relay does", async () => {
    const source = memorySource(rows, false);
    const relay = new OutboxRelay({
      source,
      bus: memoryBus([], { left: 0 }),
      leases: processRelayLeases(1),
      logger: silentLogger(),
    });
    expect(await relay.drainOnce()).toBe(3);
    expect(source.fetchedSlots).toEqual([undefined]);
  });

  it("names its publisher on every message, keeping the row's own headers", async () => {
    const sent: Array<{ topic: string; message: OutgoingMessage }> = [];
    const withHeader: OutboxRow[] = [
      { id: 1, topic: "t", message: { key: "s", value: new Uint8Array([1]), headers: { "pg-own": "kept" } } },
      { id: 2, topic: "t", message: { key: "s", value: new Uint8Array([2]) } },
    ];
    const relay = new OutboxRelay({
      source: memorySource(withHeader, false),
      bus: memoryBus(sent, { left: 0 }),
      lock: processRelayLock(),
      logger: silentLogger(),
      publisherId: "replica-a",
    });
    await relay.drainOnce();
    expect(sent.map((s) => s.message.headers)).toEqual([
      { "pg-own": "kept", [RELAY_PUBLISHER_HEADER]: "replica-a" },
      { [RELAY_PUBLISHER_HEADER]: "replica-a" },
    ]);
    // The stored row is not changed: a republish after a failover names the new holder.
    expect(withHeader[1]?.message.headers).toBeUndefined();
  });
});
