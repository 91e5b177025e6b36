import { readFileSync } from "node:fs";
import type { ConnectionOptions } from "node:tls";
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

/** How the services reach Kafka securely: TLS, its CA, and SASL credentials. */
export interface KafkaSecurityConfig {
  readonly KAFKA_SSL: boolean;
  readonly KAFKA_SSL_CA_FILE?: string | undefined;
  readonly KAFKA_SASL_MECHANISM?: "plain" | "scram-sha-256" | "scram-sha-512" | undefined;
  readonly KAFKA_SASL_USERNAME?: string | undefined;
  readonly KAFKA_SASL_PASSWORD?: string | undefined;
  readonly KAFKA_SASL_PASSWORD_FILE?: string | undefined;
}

export interface TransportConfig extends KafkaSecurityConfig {
  readonly TRANSPORT: "embedded" | "kafka";
  readonly KAFKA_BROKERS: readonly string[];
  readonly KAFKA_CLIENT_ID?: string | undefined;
  readonly KAFKA_REPLICATION_FACTOR: number;
  readonly BUS_DATABASE_URL: string;
  /** Longest a message stays in the embedded log; absent = the bus's default (7 days). */
  readonly BUS_RETENTION_MS?: number | undefined;
}

export interface BusHandle {
  readonly bus: MessageBus;
  close(): Promise<void>;
}

/** Reads a whole text file; throws when it cannot. */
export type ReadTextFile = (path: string) => string;

export interface KafkaConnectionOptions {
  /** kafkajs' `ssl`: off, on against the system CAs, or TLS options carrying a private CA. */
  readonly ssl: boolean | ConnectionOptions;
  readonly sasl?: {
    readonly mechanism: "plain" | "scram-sha-256" | "scram-sha-512";
    readonly username: string;
    readonly password: string;
  };
}

const readTextFile: ReadTextFile = (path) => readFileSync(path, "utf8");

// The reader's error is dropped on purpose: its text carries the path and OS wording, and for a
// password file the variable name is all an operator needs to find it.
function readConfigFile(variable: string, path: string, readFile: ReadTextFile): string {
  try {
    return readFile(path);
  } catch {
    throw new ValidationError(variable, "the file it names cannot be read");
  }
}

/**
 * The TLS and SASL options handed to kafkajs, from the env. Files are read through `readFile` (at
 * start, once), so this stays testable without a disk; every error names the variable, never what
 * a file holds.
 */
export function kafkaConnectionOptions(config: KafkaSecurityConfig, readFile: ReadTextFile): KafkaConnectionOptions {
  const { KAFKA_SASL_MECHANISM: mechanism, KAFKA_SASL_USERNAME: username } = config;
  const passwordFile = config.KAFKA_SASL_PASSWORD_FILE;
  const passwordInEnv = config.KAFKA_SASL_PASSWORD !== undefined && config.KAFKA_SASL_PASSWORD !== "";
  // Checked before any file is read: with both set, which one wins would be a guess.
  if (passwordInEnv && passwordFile !== undefined) {
    throw new ValidationError(
      "KAFKA_SASL_PASSWORD_FILE",
      "set KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE, not both",
    );
  }
  // Credentials without a mechanism would be silently unused: the client would connect without SASL
  // and the broker's refusal would not say why.
  if (mechanism === undefined && (username || passwordInEnv || passwordFile !== undefined)) {
    throw new ValidationError(
      "KAFKA_SASL_MECHANISM",
      "required when KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE is set",
    );
  }

  let ssl: boolean | ConnectionOptions = config.KAFKA_SSL;
  if (config.KAFKA_SSL_CA_FILE !== undefined) {
    const pem = readConfigFile("KAFKA_SSL_CA_FILE", config.KAFKA_SSL_CA_FILE, readFile);
    if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
      throw new ValidationError("KAFKA_SSL_CA_FILE", "the file it names holds no PEM certificate");
    }
    // A private CA replaces the system ones, and a broker it did not sign is refused, whatever
    // KAFKA_SSL says: naming a CA only makes sense with TLS on.
    ssl = { ca: [pem], rejectUnauthorized: true };
  }

  if (mechanism === undefined) return { ssl };
  if (!username) {
    throw new ValidationError("KAFKA_SASL_USERNAME", `required with KAFKA_SASL_MECHANISM=${mechanism}`);
  }
  let password: string;
  if (passwordFile !== undefined) {
    // A Secret written with `echo` or an editor ends with a newline that is not part of the password.
    password = readConfigFile("KAFKA_SASL_PASSWORD_FILE", passwordFile, readFile).replace(/\r?\n$/, "");
    if (password === "") throw new ValidationError("KAFKA_SASL_PASSWORD_FILE", "the file it names is empty");
  } else if (passwordInEnv) {
    password = config.KAFKA_SASL_PASSWORD as string;
  } else {
    throw new ValidationError(
      "KAFKA_SASL_PASSWORD",
      `KAFKA_SASL_MECHANISM=${mechanism} needs KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE`,
    );
  }
  return { ssl, sasl: { mechanism, username, password } };
}

/** Opens the configured transport and makes sure the topics exist (auto-creation stays off). */
export async function openBus(
  config: TransportConfig,
  clientId: string,
  topics: readonly TopicSpec[],
  logger: Logger,
  readFile: ReadTextFile = readTextFile,
): Promise<BusHandle> {
  if (config.TRANSPORT === "kafka") {
    const connection = kafkaConnectionOptions(config, readFile);
    const bus = createKafkaBus({
      brokers: config.KAFKA_BROKERS,
      clientId: config.KAFKA_CLIENT_ID ?? clientId,
      logger,
      replicationFactor: config.KAFKA_REPLICATION_FACTOR,
      // KafkaBusOptions types `ssl` as a boolean, but createKafkaBus hands it to kafkajs unchanged, and
      // kafkajs takes tls.ConnectionOptions there too (how a private CA reaches the client).
      ssl: connection.ssl as boolean,
      ...(connection.sasl ? { sasl: { ...connection.sasl } } : {}),
    });
    await bus.ensureTopics(topics);
    return { bus, close: () => bus.close() };
  }
  const db: Database = await openServiceDatabase(config.BUS_DATABASE_URL, embeddedBusMigrations, logger);
  const bus = createEmbeddedBus({
    db,
    logger,
    ...(config.BUS_RETENTION_MS === undefined ? {} : { maxRetentionMs: config.BUS_RETENTION_MS }),
  });
  await bus.ensureTopics(topics);
  return {
    bus,
    close: async () => {
      await bus.close();
      await db.destroy();
    },
  };
}
