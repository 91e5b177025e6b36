// What the observation reads from the gateway's settings, as plain values: they cross to the
// observation thread (observation-worker.ts) as its workerData.

import type { TransportConfig } from "@prefix-guard/runtime";
import type { GatewayConfig } from "./config";

/** The settings the observation reads: plain values, so they cross to the observation thread as they are. */
export type ObservationSettings = Pick<
  GatewayConfig,
  | "DATABASE_URL"
  | "DATABASE_MIGRATIONS"
  | "DATABASE_MIGRATIONS_WAIT_MS"
  | "GATEWAY_OUTBOX_TIMEOUT_MS"
  | "GATEWAY_OUTBOX_QUEUE"
  | "OUTBOX_RETENTION_MS"
  | "RELAY_LEASES"
  | "GATEWAY_SESSION_MEMORY_BYTES"
>;

export function observationSettingsOf(config: GatewayConfig): ObservationSettings {
  return {
    DATABASE_URL: config.DATABASE_URL,
    DATABASE_MIGRATIONS: config.DATABASE_MIGRATIONS,
    DATABASE_MIGRATIONS_WAIT_MS: config.DATABASE_MIGRATIONS_WAIT_MS,
    GATEWAY_OUTBOX_TIMEOUT_MS: config.GATEWAY_OUTBOX_TIMEOUT_MS,
    GATEWAY_OUTBOX_QUEUE: config.GATEWAY_OUTBOX_QUEUE,
    OUTBOX_RETENTION_MS: config.OUTBOX_RETENTION_MS,
    RELAY_LEASES: config.RELAY_LEASES,
    GATEWAY_SESSION_MEMORY_BYTES: config.GATEWAY_SESSION_MEMORY_BYTES,
  };
}

export interface ObservationWorkerData {
  readonly observation: ObservationSettings;
  readonly transport: TransportConfig;
  readonly logLevel: string;
}
