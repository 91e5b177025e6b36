import {
  createEmbeddedBus,
  createKafkaBus,
  embeddedBusMigrations,
  type MessageBus,
  type TopicSpec,
} from "@prefix-guard/bus";
import type { Database } from "@prefix-guard/db";
import { ValidationError } from "@prefix-guard/errors";
import type { Logger } from "@prefix-guard/logging";
import { openServiceDatabase } from "./open-database";

export interface TransportConfig {
  readonly TRANSPORT: "embedded" | "kafka";
  readonly KAFKA_BROKERS: readonly string[];
  readonly KAFKA_CLIENT_ID?: string | undefined;
  readonly KAFKA_REPLICATION_FACTOR: number;
  readonly KAFKA_SSL: boolean;
  readonly KAFKA_SASL_MECHANISM?: "plain" | "scram-sha-256" | "scram-sha-512" | undefined;
  readonly KAFKA_SASL_USERNAME?: string | undefined;
  readonly KAFKA_SASL_PASSWORD?: string | undefined;
  readonly BUS_DATABASE_URL: string;
}

export interface BusHandle {
  readonly bus: MessageBus;
  close(): Promise<void>;
}

/** Opens the configured transport and makes sure the topics exist (auto-creation stays off). */
export async function openBus(
  config: TransportConfig,
  clientId: string,
  topics: readonly TopicSpec[],
  logger: Logger,
): Promise<BusHandle> {
  if (config.TRANSPORT === "kafka") {
    let sasl: Parameters<typeof createKafkaBus>[0]["sasl"];
    if (config.KAFKA_SASL_MECHANISM) {
      if (!config.KAFKA_SASL_USERNAME || !config.KAFKA_SASL_PASSWORD) {
        throw new ValidationError("KAFKA_SASL_USERNAME", "SASL needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD");
      }
      sasl = {
        mechanism: config.KAFKA_SASL_MECHANISM,
        username: config.KAFKA_SASL_USERNAME,
        password: config.KAFKA_SASL_PASSWORD,
      } as never;
    }
    const bus = createKafkaBus({
      brokers: config.KAFKA_BROKERS,
      clientId: config.KAFKA_CLIENT_ID ?? clientId,
      logger,
      replicationFactor: config.KAFKA_REPLICATION_FACTOR,
      ssl: config.KAFKA_SSL,
      ...(sasl ? { sasl } : {}),
    });
    await bus.ensureTopics(topics);
    return { bus, close: () => bus.close() };
  }
  const db: Database = await openServiceDatabase(config.BUS_DATABASE_URL, embeddedBusMigrations, logger);
  const bus = createEmbeddedBus({ db, logger });
  await bus.ensureTopics(topics);
  return {
    bus,
    close: async () => {
      await bus.close();
      await db.destroy();
    },
  };
}
