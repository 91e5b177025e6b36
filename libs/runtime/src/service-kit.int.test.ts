// The service kit's lifecycle on a real (SQLite) database and the embedded bus: everything started
// is stopped in reverse order, and a start that fails half way releases what it had started.
import { createEmbeddedBus, embeddedBusMigrations } from "@prefix-guard/bus";
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
};

describe("ServiceKit", () => {
  const busDb = createMemoryDatabase();
  afterAll(async () => busDb.destroy());

  async function openKit() {
    await runMigrations(busDb, embeddedBusMigrations);
    const bus = createEmbeddedBus({ db: busDb, logger: silentLogger() });
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
});
