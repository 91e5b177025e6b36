import { runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase } from "@prefix-guard/db/testing";
import { silentLogger } from "@prefix-guard/logging";
import { busContract } from "./bus-contract";
import { createEmbeddedBus, embeddedBusMigrations } from "./embedded-bus";
import { createKafkaBus } from "./kafka-bus";
import { testKafkaBrokers } from "./testing";

busContract("real Kafka broker", async () => {
  const bus = createKafkaBus({ brokers: testKafkaBrokers, clientId: "bus-contract", logger: silentLogger() });
  return { bus, close: () => bus.close() };
});

busContract("embedded (SQLite-backed log)", async () => {
  const db = createMemoryDatabase();
  await runMigrations(db, embeddedBusMigrations);
  const bus = createEmbeddedBus({ db, logger: silentLogger(), pollIntervalMs: 50 });
  return {
    bus,
    close: async () => {
      await bus.close();
      await db.destroy();
    },
  };
});
