// The service kit's lifecycle on a real (SQLite) database and the embedded bus: everything started
// is stopped in reverse order, and a start that fails half way releases what it had started.
import { createEmbeddedBus, embeddedBusMigrations, type MessageBus } from "@prefix-guard/bus";
import { eventually } from "@prefix-guard/bus/testing";
import { runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase } from "@prefix-guard/db/testing";
import { silentLogger } from "@prefix-guard/logging";
import { afterAll, describe, expect, it } from "vitest";
import { ServiceKit, type ServiceKitConfig } from "./service-kit";

const config: ServiceKitConfig = {
  DATABASE_URL: "sqlite::memory:",
  GRPC_HOST: "127.0.0.1",
  GRPC_PORT: 0,
  METRICS_PORT: 0,
  SHUTDOWN_GRACE_MS: 1_000,
  CONSUMER_PARTITIONS_CONCURRENTLY: 1,
  CONSUMER_COMMIT_INTERVAL_MS: 0,
};

describe("ServiceKit", () => {
  const busDb = createMemoryDatabase();
  afterAll(async () => busDb.destroy());

  /** The bus of the last kit opened. */
  let bus: MessageBus;

  async function openKit() {
    await runMigrations(busDb, embeddedBusMigrations);
    bus = createEmbeddedBus({ db: busDb, logger: silentLogger() });
    return ServiceKit.open("kit-test", config, { migrations: [], bus, logger: silentLogger(), now: Date.now });
  }

  it("stops what it started in reverse order, and every step even when one fails", async () => {
    const kit = await openKit();
    const order: string[] = [];
    kit.onStop(async () => {
      order.push("first registered");
    });
    kit.onStop(async () => {
      order.push("second registered");
      throw new Error("flush failed");
    });
    kit.onStop(async () => {
      order.push("last registered");
    });
    await expect(kit.stop()).rejects.toThrow("flush failed");
    expect(order).toEqual(["last registered", "second registered", "first registered"]);
    // The database was closed last: a query now fails.
    await expect(kit.db.raw("select 1")).rejects.toThrow();
    // A second stop does nothing.
    await kit.stop();
    expect(order).toHaveLength(3);
  });

  it("releases what a failed start had started, and rethrows the start's error", async () => {
    const kit = await openKit();
    const stopped: string[] = [];
    await expect(
      kit.starting(async () => {
        kit.onStop(async () => {
          stopped.push("relay");
        });
        throw new Error("port in use");
      }),
    ).rejects.toThrow("port in use");
    expect(stopped).toEqual(["relay"]);
    await expect(kit.db.raw("select 1")).rejects.toThrow();
  });

  it("consume: records each applied event's delay, and sends an event whose error isPoison names to the DLQ", async () => {
    const kit = await openKit();
    try {
      const topic = `kit-consume-${Date.now()}`;
      // A set: after the poison, the batch is applied again event by event (apply is idempotent).
      const applied = new Set<string>();
      const dead: string[] = [];
      await bus.ensureTopics([
        { topic, partitions: 1 },
        { topic: `${topic}.dlq`, partitions: 1 },
      ]);
      await bus.subscribe({
        topic: `${topic}.dlq`,
        groupId: "kit-dlq-reader",
        fromBeginning: true,
        handleMessage: async (message) => {
          dead.push(Buffer.from(message.value).toString("utf8"));
        },
      });
      await kit.consume({
        topic,
        groupId: "kit-consumer",
        decode: (value) => ({ name: Buffer.from(value).toString("utf8"), occurredAtMs: Date.now() - 2_000 }),
        apply: async (events) => {
          for (const event of events) {
            if (event.name === "never") throw new RangeError("can never apply");
            applied.add(event.name);
          }
        },
        isPoison: (error) => error instanceof RangeError,
      });
      await bus.publish(
        topic,
        ["one", "never", "two"].map((name) => ({ key: "s1", value: Buffer.from(name) })),
      );
      await eventually(() => applied.has("two") && dead.length === 1, { what: "two applied, one dead-lettered" });
      expect([...applied]).toEqual(["one", "two"]);
      expect(dead).toEqual(["never"]);
      const exposition = await kit.metrics.registry.metrics();
      const count = /prefixguard_event_apply_delay_seconds_count\{[^}]*consumer="kit-consumer"[^}]*\} (\d+)/.exec(
        exposition,
      );
      expect(Number(count?.[1])).toBe(2);
      const sum = /prefixguard_event_apply_delay_seconds_sum\{[^}]*consumer="kit-consumer"[^}]*\} ([\d.]+)/.exec(
        exposition,
      );
      // Two events that occurred 2 s before they were applied.
      expect(Number(sum?.[1])).toBeGreaterThanOrEqual(4);
      expect(exposition).toMatch(/prefixguard_events_consumed_total\{[^}]*outcome="dead_lettered"[^}]*\} 1/);
    } finally {
      await kit.stop();
    }
  });
});
