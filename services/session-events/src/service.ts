import { randomUUID } from "node:crypto";
import { type MessageBus, type OutboxRelay, traceHeaders } from "@prefix-guard/bus";
import { newEventId } from "@prefix-guard/events";
import type { Logger } from "@prefix-guard/logging";
import { sessionEventsMigrations } from "@prefix-guard/migrations/session-events";
import { ServiceKit } from "@prefix-guard/runtime";
import type { Registry } from "prom-client";
import { sessionEventsRegistration } from "./adapters/grpc/session-events-grpc";
import { feedMetrics } from "./adapters/metrics/feed-metrics";
import { sessionEventOutboxSource } from "./adapters/mysql/session-event-outbox";
import { SessionStore } from "./adapters/mysql/session-store";
import { SessionEventFeed } from "./application/event-feed";
import { RetentionSweep } from "./application/retention-sweep";
import { SessionCommands } from "./application/session-commands";
import type { SessionEventsConfig } from "./config";
import { MAX_REQUEST_BYTES } from "./domain/limits";

export interface RunningSessionEvents {
  readonly address: string;
  readonly relay: OutboxRelay;
  /** Its Prometheus registry (served on METRICS_PORT when > 0). */
  readonly metrics: Registry;
  /** Erases idle sessions (SESSION_RETENTION_DAYS) on its timer; runOnce for tests and tools. */
  readonly retention: RetentionSweep;
  stop(): Promise<void>;
}

/** Composition root: DB + migrations, commands, the relay to the bus, the gRPC server. */
export async function startSessionEvents(
  config: SessionEventsConfig,
  deps: { bus: MessageBus; logger: Logger; now?: () => number },
): Promise<RunningSessionEvents> {
  const now = deps.now ?? Date.now;
  const kit = await ServiceKit.open("session-events", config, {
    migrations: sessionEventsMigrations,
    // Several statements per query: SaveMessage commits in two round trips. On SQLite, erased rows
    // are zeroed in the file rather than left in free pages.
    database: { multipleStatements: true, secureDelete: true },
    bus: deps.bus,
    logger: deps.logger,
    now,
  });
  return kit.starting(async () => {
    const store = new SessionStore(kit.db);
    const feed = new SessionEventFeed(config.FEED_MAX_FOLLOWERS, feedMetrics(kit.metrics.registry));
    const commands = new SessionCommands({
      store,
      now,
      newEventId: () => newEventId(now()),
      newId: () => randomUUID(),
      traceparent: () => traceHeaders().traceparent,
      dataKeyCacheSize: config.SESSION_DATA_KEY_CACHE_SIZE,
      committed: (event) => feed.committed(event),
      eventsRead: (sessionId) => feed.read(sessionId),
      limits: {
        characterQuota: config.SESSION_CHARACTER_QUOTA,
        ...(config.SESSION_MAX_SERIALIZED_BYTES !== undefined
          ? { maxSerializedSessionBytes: config.SESSION_MAX_SERIALIZED_BYTES }
          : {}),
      },
    });
    const relay = kit.startRelay({ source: sessionEventOutboxSource(kit.db) });
    const server = await kit.serve([sessionEventsRegistration(commands, () => relay.notify(), feed)], {
      // Slightly above the domain's MAX_REQUEST_BYTES so oversize input gets its field-named error from validation.
      maxReceiveMessageBytes: MAX_REQUEST_BYTES + 64 * 1024,
    });
    // Before the server's graceful stop, which would otherwise wait out the grace for open streams.
    kit.onStop(async () => feed.close());
    const retention = new RetentionSweep({
      commands,
      store,
      logger: kit.logger,
      now,
      retentionDays: config.SESSION_RETENTION_DAYS,
      intervalMs: config.SESSION_RETENTION_SWEEP_MS,
      afterErase: () => relay.notify(),
    });
    retention.start();
    kit.onStop(() => retention.stop());
    return {
      address: server.address,
      relay,
      metrics: kit.metrics.registry,
      retention,
      stop: () => kit.stop(),
    };
  });
}
