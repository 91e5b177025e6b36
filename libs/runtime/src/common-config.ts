import { booleanFlag, brokerList, port, positiveMs, transportKind, z } from "@prefix-guard/config";

/**
 * Environment shared by every service (each service adds its own fields). Defaults run locally
 * without any setup: loopback, SQLite under .data/, the embedded transport.
 */
export const commonConfigShape = {
  GRPC_HOST: z.string().min(1).default("127.0.0.1"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  TRANSPORT: transportKind,
  KAFKA_BROKERS: brokerList.default(["127.0.0.1:9092"]),
  KAFKA_CLIENT_ID: z.string().min(1).optional(),
  KAFKA_REPLICATION_FACTOR: z.coerce.number().int().min(1).max(5).default(1),
  KAFKA_SSL: booleanFlag(false),
  KAFKA_SASL_MECHANISM: z.enum(["plain", "scram-sha-256", "scram-sha-512"]).optional(),
  KAFKA_SASL_USERNAME: z.string().optional(),
  KAFKA_SASL_PASSWORD: z.string().optional(),
  /** Embedded transport's log (only with TRANSPORT=embedded). */
  BUS_DATABASE_URL: z.string().min(1).default("sqlite:.data/bus.sqlite"),
  /** Largest event a consumer reads; bigger ones go to the DLQ unread (bounded memory). */
  BUS_MAX_MESSAGE_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(64 * 1024 * 1024)
    .default(4 * 1024 * 1024),
  /** Partitions of a topic one consumer applies at the same time (each in its own transactions). */
  CONSUMER_PARTITIONS_CONCURRENTLY: z.coerce.number().int().min(1).max(64).default(3),
  /**
   * `apply`: run pending migrations at start; replicas starting together take turns through a
   * database lock. `verify`: run no DDL and wait for the migrations Job to have applied every one.
   */
  DATABASE_MIGRATIONS: z.enum(["apply", "verify"]).default("apply"),
  /** How long start-up waits for another replica's migrations (apply) or for the Job (verify). */
  DATABASE_MIGRATIONS_WAIT_MS: positiveMs(120_000),
  /** 0 disables the Prometheus endpoint. */
  METRICS_PORT: port(0),
  /**
   * Workspaces named in the per-workspace series (prefix breaks in prompt-assembly, collapse extra
   * cost in cache-monitor); later ones count as "(other)". Bounds the series a fleet with many
   * workspaces creates.
   */
  METRICS_WORKSPACE_LABELS: z.coerce.number().int().min(0).max(10_000).default(100),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
  SHUTDOWN_GRACE_MS: positiveMs(4_000),
  /** Serve TLS with this certificate and key (PEM files); unset = plaintext (loopback default). */
  GRPC_TLS_CERT_FILE: z.string().min(1).optional(),
  GRPC_TLS_KEY_FILE: z.string().min(1).optional(),
  /** Require client certificates signed by this CA (mTLS). */
  GRPC_TLS_CLIENT_CA_FILE: z.string().min(1).optional(),
  /** `caller:token,...`: every RPC must carry `authorization: Bearer <token>` of a listed caller. */
  GRPC_AUTH_TOKENS: z.string().optional(),
  /** How this service calls its peers (prompt-assembly → rules-snapshot, session-events). */
  PEER_TLS_CA_FILE: z.string().min(1).optional(),
  PEER_TLS_CERT_FILE: z.string().min(1).optional(),
  PEER_TLS_KEY_FILE: z.string().min(1).optional(),
  PEER_AUTH_TOKEN: z.string().optional(),
} as const;

export type CommonConfig = {
  [K in keyof typeof commonConfigShape]: z.infer<(typeof commonConfigShape)[K]>;
};
