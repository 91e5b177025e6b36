import {
  type MessageBus,
  OutboxRelay,
  outboxMessageTable,
  relayLockFor,
  runEventConsumer,
  tableOutboxSource,
} from "@prefix-guard/bus";
import { UnavailableError } from "@prefix-guard/errors";
import { decodeSessionEvent, newEventId, sha256Hex, Topics } from "@prefix-guard/events";
import { startGrpcServer } from "@prefix-guard/grpc";
import type { Logger } from "@prefix-guard/logging";
import { rulesSnapshotMigrations } from "@prefix-guard/migrations/rules-snapshot";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { grpcServerSecurity, openMetrics, openServiceDatabase } from "@prefix-guard/runtime";
import { Counter } from "prom-client";
import { cachedAgentsMdReader } from "./adapters/fs/agents-md-reader";
import { rulesSnapshotRegistration } from "./adapters/grpc/rules-snapshot-grpc";
import { outboxRulesEventSink } from "./adapters/mysql/outbox-event-sink";
import { SnapshotStore } from "./adapters/mysql/snapshot-store";
import { RulesSnapshotService } from "./application/rules-snapshot-service";
import type { RulesSnapshotConfig } from "./config";

export interface RunningRulesSnapshot {
  readonly address: string;
  readonly service: RulesSnapshotService;
  stop(): Promise<void>;
}

/** Composition root: DB, the snapshot service, its session.events.v1 consumer, the event relay, gRPC. */
export async function startRulesSnapshot(
  config: RulesSnapshotConfig,
  deps: { bus: MessageBus; logger: Logger; now?: () => number },
): Promise<RunningRulesSnapshot> {
  const { logger, bus } = deps;
  const now = deps.now ?? Date.now;
  const db = await openServiceDatabase(config.DATABASE_URL, [...rulesSnapshotMigrations, outboxMessageTable], logger);
  const metrics = await openMetrics("rules-snapshot", config, logger);
  const decisions = new Counter({
    name: "rules_resolve_decisions_total",
    help: "Resolve outcomes by decision (PINNED, RETAINED, REPINNED_*, DEGRADED_RAW ...).",
    labelNames: ["decision"] as const,
    registers: [metrics.registry],
  });
  const relay = new OutboxRelay({
    source: tableOutboxSource(db),
    bus,
    lock: relayLockFor(db, "prefix-guard:rules-snapshot:relay"),
    logger,
    now,
  });
  const service = new RulesSnapshotService({
    store: new SnapshotStore(db),
    readFile: cachedAgentsMdReader({ cacheBytes: config.RULES_FILE_CACHE_BYTES }),
    sha256: sha256Hex,
    now,
    newEventId: () => newEventId(now()),
    events: outboxRulesEventSink(db, now),
    logger,
    dbTimeoutMs: config.RULES_DB_TIMEOUT_MS,
    locale: config.RULES_LOCALE,
  });
  relay.start();
  const consumer = await runEventConsumer({
    bus,
    topic: Topics.sessionEvents,
    groupId: config.CONSUMER_GROUP,
    logger,
    decode: decodeSessionEvent,
    maxMessageBytes: config.BUS_MAX_MESSAGE_BYTES,
    onOutcome: (outcome, count) => metrics.eventsConsumed.inc({ consumer: config.CONSUMER_GROUP, outcome }, count),
    partitionsConcurrently: config.CONSUMER_PARTITIONS_CONCURRENTLY,
    // Only cleanup events (compaction, deletion, promotion) touch the database; the rest are skipped.
    apply: async (events) => {
      for (const event of events) {
        metrics.eventApplyDelay.observe(
          { consumer: config.CONSUMER_GROUP },
          Math.max(0, Date.now() - event.occurredAtMs) / 1000,
        );
        const outcome = await service.applySessionEvent(event);
        if (outcome.kind === "gap")
          logger.warn(
            { session: event.sessionId, seq: event.seq, lastSeq: outcome.lastSeq },
            "session event gap (applied: cleanup does not depend on earlier events)",
          );
      }
      relay.notify();
    },
  }).catch((error: unknown) => {
    throw new UnavailableError("cannot subscribe to session.events.v1", { cause: error });
  });
  const server = await startGrpcServer({
    ...grpcServerSecurity(config),
    host: config.GRPC_HOST,
    // Reported AGENTS.md content is capped at 1 MiB; anything much larger is not a rules file.
    maxReceiveMessageBytes: 2 * 1024 * 1024,
    port: config.GRPC_PORT,
    logger,
    services: [
      rulesSnapshotRegistration(
        service,
        () => relay.notify(),
        (decision) => decisions.inc({ decision: (Decision[decision] ?? String(decision)).replace("DECISION_", "") }),
      ),
    ],
    metrics: metrics.registry,
  });
  logger.info({ address: server.address }, "rules-snapshot serving");
  return {
    address: server.address,
    service,
    async stop() {
      await server.shutdown(config.SHUTDOWN_GRACE_MS);
      await consumer.stop();
      await relay.stop();
      await metrics.close();
      await db.destroy();
    },
  };
}
