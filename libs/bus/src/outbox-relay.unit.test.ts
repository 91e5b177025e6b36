import { silentLogger } from "@prefix-guard/logging";
import { describe, expect, it } from "vitest";
import { OutboxRelay, type OutboxRow, type OutboxSource, processRelayLock, RELAY_PUBLISHER_HEADER } from "./outbox";
import type { MessageBus, OutgoingMessage } from "./port";

function memorySource(rows: OutboxRow[], failMarkOnce: boolean): OutboxSource & { published: Set<number> } {
  const published = new Set<number>();
  let failNext = failMarkOnce;
  return {
    name: "memory",
    published,
    fetchUnpublished: async (limit) => rows.filter((r) => !published.has(r.id)).slice(0, limit),
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
