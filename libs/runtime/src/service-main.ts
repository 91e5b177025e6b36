import type { MessageBus } from "@prefix-guard/bus";
import type { Migration } from "@prefix-guard/db";
import { createLogger, type Logger } from "@prefix-guard/logging";
import { startTelemetry } from "@prefix-guard/telemetry";
import { openBus, type TransportConfig } from "./open-bus";
import { openServiceDatabase } from "./open-database";
import { runUntilSignal } from "./signals";
import { defaultTopicSpecs } from "./topics";

/**
 * What every service's main.ts does: config (already parsed), logger, telemetry, the bus, the
 * service, then a bounded shutdown on SIGINT/SIGTERM in reverse order.
 */
/** The part of a service's config the main wiring reads. */
export type MainConfig = TransportConfig & {
  readonly LOG_LEVEL: string;
  readonly OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
  readonly SHUTDOWN_GRACE_MS: number;
};

export async function runServiceMain<C extends MainConfig>(
  service: string,
  config: C,
  start: (config: C, deps: { bus: MessageBus; logger: Logger }) => Promise<{ stop(): Promise<void> }>,
): Promise<void> {
  const logger = createLogger({ service, level: config.LOG_LEVEL });
  const telemetry = startTelemetry({ serviceName: service, otlpEndpoint: config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT });
  const bus = await openBus(config, service, defaultTopicSpecs(), logger);
  const running = await start(config, { bus: bus.bus, logger });
  runUntilSignal(
    async () => {
      await running.stop();
      await bus.close();
      await telemetry.shutdown();
    },
    logger,
    config.SHUTDOWN_GRACE_MS,
  );
}

/** What a migrations entry point (`dist/migrate.js`, the Kubernetes Job) reads from the env. */
export type MigrationsMainConfig = {
  readonly DATABASE_URL: string;
  readonly LOG_LEVEL: string;
  readonly DATABASE_MIGRATIONS_WAIT_MS: number;
};

/**
 * A service's migrations Job: applies what is pending, under the same database lock a replica takes
 * when it migrates at start, then exits. Replicas running DATABASE_MIGRATIONS=verify wait for it.
 */
export async function runMigrationsMain(
  service: string,
  config: MigrationsMainConfig,
  migrations: readonly Migration[],
): Promise<void> {
  const logger = createLogger({ service, level: config.LOG_LEVEL });
  const db = await openServiceDatabase(
    config.DATABASE_URL,
    migrations,
    logger,
    {},
    {
      mode: "apply",
      waitMs: config.DATABASE_MIGRATIONS_WAIT_MS,
    },
  );
  await db.destroy();
}
