import { RELAY_LEASE_SLOTS } from "@prefix-guard/bus";
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
  /** File holding the SASL password (a mounted Secret), instead of KAFKA_SASL_PASSWORD: set one, not both. */
  KAFKA_SASL_PASSWORD_FILE: z.string().min(1).optional(),
  /** PEM CA that signed the brokers' certificates. Turns TLS on, verified against this CA only. */
  KAFKA_SSL_CA_FILE: z.string().min(1).optional(),
  /** Embedded transport's log (only with TRANSPORT=embedded). */
  BUS_DATABASE_URL: z.string().min(1).default("sqlite:.data/bus.sqlite"),
  /** Largest event a consumer reads; bigger ones go to the DLQ unread (bounded memory). */
  BUS_MAX_MESSAGE_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(64 * 1024 * 1024)
    .default(4 * 1024 * 1024),
  /**
   * Longest any message stays in the embedded log (a topic's own retention may be shorter): the
   * log is pruned on a timer, so `make run`'s bus file does not grow forever and keeps no event
   * longer than this.
   */
  BUS_RETENTION_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .default(7 * 24 * 3_600_000),
  /** Published rows of a service's outbox table are deleted after this (session-events' event store never is). */
  OUTBOX_RETENTION_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .default(24 * 3_600_000),
  /**
   * Leases the service's outbox relay is split over (docs/decisions/relay-leases.md): each publishes
   * the sessions (message keys) of its slots, held by one replica at a time, and the replicas split
   * the leases, so more replicas publish more. 1 = one replica publishes everything. At most 64 (the
   * slots rows are stored with); it may change between deployments.
   */
  RELAY_LEASES: z.coerce.number().int().min(1).max(RELAY_LEASE_SLOTS).default(1),
  /** Partitions of a topic one consumer applies at the same time (each in its own transactions). */
  CONSUMER_PARTITIONS_CONCURRENTLY: z.coerce.number().int().min(1).max(64).default(3),
  /**
   * Kafka: how long an applied consumer position may wait before it is committed, so one commit
   * carries many batches (0: a commit after every batch). A crash redelivers at most this much, which
   * every consumer applies idempotently.
   */
  CONSUMER_COMMIT_INTERVAL_MS: z.coerce.number().int().min(0).max(60_000).default(1_000),
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
  /**
   * Removed: plaintext tokens in the environment. Set, it stops start-up naming its replacement,
   * so a deployment that still sets it does not silently run without its intended authentication.
   */
  GRPC_AUTH_TOKENS: z
    .undefined({
      error: "GRPC_AUTH_TOKENS was removed: list token hashes in PRINCIPALS_FILE (`prefixctl token hash`)",
    })
    .optional(),
  /** The principals file (JSON; shared by every service, reloaded when it changes). */
  PRINCIPALS_FILE: z.string().min(1).optional(),
  /** How often the principals file is checked for a change (a rotated token takes effect within it). */
  PRINCIPALS_RELOAD_MS: z.coerce.number().int().min(100).max(600_000).default(2_000),
  /** Development only: serve a non-loopback GRPC_HOST with no authentication. */
  INSECURE_ALLOW_UNAUTHENTICATED: booleanFlag(false),
  /** How this service calls its peers (prompt-assembly → rules-snapshot, session-events). */
  PEER_TLS_CA_FILE: z.string().min(1).optional(),
  PEER_TLS_CERT_FILE: z.string().min(1).optional(),
  PEER_TLS_KEY_FILE: z.string().min(1).optional(),
  PEER_AUTH_TOKEN: z.string().optional(),
  /** A file holding the peer token (a mounted Secret), instead of PEER_AUTH_TOKEN. */
  PEER_AUTH_TOKEN_FILE: z.string().min(1).optional(),
} as const;

export type CommonConfig = {
  [K in keyof typeof commonConfigShape]: z.infer<(typeof commonConfigShape)[K]>;
};
