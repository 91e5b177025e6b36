import { type MessageBus, outboxMessageLeaseSlot, outboxMessageTable, tableOutboxSource } from "@prefix-guard/bus";
import { decodeSessionEvent, newEventId, sha256Hex, Topics } from "@prefix-guard/events";
import type { Logger } from "@prefix-guard/logging";
import { rulesSnapshotMigrations } from "@prefix-guard/migrations/rules-snapshot";
import { ServiceKit } from "@prefix-guard/runtime";
import type { Registry } from "prom-client";
import { cachedAgentsMdReader } from "./adapters/fs/agents-md-reader";
import { rulesSnapshotRegistration } from "./adapters/grpc/rules-snapshot-grpc";
import { RulesSnapshotMetrics } from "./adapters/metrics/rules-snapshot-metrics";
import { outboxRulesEventSink } from "./adapters/mysql/outbox-event-sink";
import { SnapshotStore } from "./adapters/mysql/snapshot-store";
import { RulesSnapshotService } from "./application/rules-snapshot-service";
import { type RulesSnapshotConfig, rulesFileConfinement } from "./config";

export interface RunningRulesSnapshot {
  readonly address: string;
  readonly service: RulesSnapshotService;
  /** Its Prometheus registry (served on METRICS_PORT when > 0). */
  readonly metrics: Registry;
  stop(): Promise<void>;
}

/** The service's tables: its own migrations and the outbox its relay reads (also run by src/migrate.ts). */
export const rulesSnapshotSchemaMigrations = [...rulesSnapshotMigrations, outboxMessageTable, outboxMessageLeaseSlot];

/** Composition root: DB, the snapshot service, its session.events.v1 consumer, the event relay, gRPC. */
export async function startRulesSnapshot(
  config: RulesSnapshotConfig,
  deps: { bus: MessageBus; logger: Logger; now?: () => number },
): Promise<RunningRulesSnapshot> {
  const { logger } = deps;
  const now = deps.now ?? Date.now;
  const kit = await ServiceKit.open("rules-snapshot", config, {
    migrations: rulesSnapshotSchemaMigrations,
    bus: deps.bus,
    logger,
    now,
  });
  return kit.starting(async () => {
    const metrics = new RulesSnapshotMetrics(kit.metrics.registry);
    const relay = kit.startRelay({ source: tableOutboxSource(kit.db) });
    const confinement = rulesFileConfinement(config);
    if (!confinement.fileSourcesEnabled)
      logger.warn(
        { grpcHost: config.GRPC_HOST },
        "rules files disabled: GRPC_HOST is not loopback and RULES_FILE_ROOTS is empty; every rules_file is refused (set RULES_FILE_ROOTS to read them)",
      );
    const service = new RulesSnapshotService({
      store: new SnapshotStore(kit.db),
      readFile: cachedAgentsMdReader({ confinement, cacheBytes: config.RULES_FILE_CACHE_BYTES }),
      sha256: sha256Hex,
      now,
      newEventId: () => newEventId(now()),
      events: outboxRulesEventSink(kit.db, now),
      logger,
      dbTimeoutMs: config.RULES_DB_TIMEOUT_MS,
      locale: config.RULES_LOCALE,
      eventsCommitted: () => relay.notify(),
    });
    await kit.consume({
      topic: Topics.sessionEvents,
      groupId: config.CONSUMER_GROUP,
      decode: decodeSessionEvent,
      maxMessageBytes: config.BUS_MAX_MESSAGE_BYTES,
      // Only cleanup events (compaction, deletion, promotion) touch the database; the rest are skipped.
      // Nothing waits for a cleanup (Resolve fences compactions by generation itself): few large
      // fetches (docs/decisions/consumer-apply-groups.md).
      fetchMinBytes: config.CLEANUP_FETCH_MIN_BYTES,
      fetchMaxWaitMs: config.CLEANUP_FETCH_MAX_WAIT_MS,
      apply: async (events) => {
        for (const event of events) {
          const outcome = await service.applySessionEvent(event);
          if (outcome.kind === "gap")
            logger.warn(
              { session: event.sessionId, seq: event.seq, lastSeq: outcome.lastSeq },
              "session event gap (applied: cleanup does not depend on earlier events)",
            );
        }
      },
    });
    const server = await kit.serve(
      [rulesSnapshotRegistration(service, (decision) => metrics.decided(decision))],
      // Reported AGENTS.md content is capped at 1 MiB; anything much larger is not a rules file.
      { maxReceiveMessageBytes: 2 * 1024 * 1024 },
    );
    return { address: server.address, service, metrics: kit.metrics.registry, stop: () => kit.stop() };
  });
}
