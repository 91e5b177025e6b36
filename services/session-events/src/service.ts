import { randomUUID } from "node:crypto";
import { type MessageBus, OutboxRelay, relayLockFor, traceHeaders } from "@prefix-guard/bus";
import { newEventId } from "@prefix-guard/events";
import { startGrpcServer } from "@prefix-guard/grpc";
import type { Logger } from "@prefix-guard/logging";
import { sessionEventsMigrations } from "@prefix-guard/migrations/session-events";
import { grpcServerSecurity, openMetrics, openServiceDatabase } from "@prefix-guard/runtime";
import { Counter, Gauge } from "prom-client";
import { sessionEventsRegistration } from "./adapters/grpc/session-events-grpc";
import { sessionEventOutboxSource } from "./adapters/mysql/session-event-outbox";
import { SessionStore } from "./adapters/mysql/session-store";
import { SessionCommands } from "./application/session-commands";
import type { SessionEventsConfig } from "./config";
import { MAX_REQUEST_BYTES } from "./domain/limits";

export interface RunningSessionEvents {
  readonly address: string;
  readonly relay: OutboxRelay;
  stop(): Promise<void>;
}

/** Composition root: DB + migrations, commands, the relay to the bus, the gRPC server. */
export async function startSessionEvents(
  config: SessionEventsConfig,
  deps: { bus: MessageBus; logger: Logger; now?: () => number },
): Promise<RunningSessionEvents> {
  const logger = deps.logger;
  const now = deps.now ?? Date.now;
  // Several statements per query: SaveMessage commits in two round trips.
  const db = await openServiceDatabase(config.DATABASE_URL, sessionEventsMigrations, logger, {
    multipleStatements: true,
  });
  const commands = new SessionCommands({
    store: new SessionStore(db),
    now,
    newEventId: () => newEventId(now()),
    newId: () => randomUUID(),
    traceparent: () => traceHeaders().traceparent,
    limits: {
      characterQuota: config.SESSION_CHARACTER_QUOTA,
      ...(config.SESSION_MAX_SERIALIZED_BYTES !== undefined
        ? { maxSerializedSessionBytes: config.SESSION_MAX_SERIALIZED_BYTES }
        : {}),
    },
  });
  const metrics = await openMetrics("session-events", config, logger);
  const source = sessionEventOutboxSource(db);
  const published = new Counter({
    name: "relay_events_published_total",
    help: "session events published by the relay.",
    registers: [metrics.registry],
  });
  new Gauge({
    name: "relay_backlog_events",
    help: "session events written but not yet published (grows while the broker is down).",
    registers: [metrics.registry],
    async collect() {
      this.set(await source.countUnpublished());
    },
  });
  const relay = new OutboxRelay({
    source,
    onPublished: (count) => published.inc(count),
    bus: deps.bus,
    lock: relayLockFor(db, "prefix-guard:session-events:relay"),
    logger,
    now,
    batchSize: config.RELAY_BATCH_SIZE,
  });
  relay.start();
  const server = await startGrpcServer({
    ...grpcServerSecurity(config),
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    logger,
    // Slightly above the domain's MAX_REQUEST_BYTES so oversize input gets its field-named error from validation.
    maxReceiveMessageBytes: MAX_REQUEST_BYTES + 64 * 1024,
    services: [sessionEventsRegistration(commands, () => relay.notify())],
    metrics: metrics.registry,
  });
  logger.info({ address: server.address }, "session-events serving");
  return {
    address: server.address,
    relay,
    async stop() {
      await server.shutdown(config.SHUTDOWN_GRACE_MS);
      await relay.stop();
      await metrics.close();
      await db.destroy();
    },
  };
}
