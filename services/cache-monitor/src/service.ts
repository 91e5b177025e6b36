import {
  type MessageBus,
  OutboxRelay,
  PoisonMessageError,
  relayLockFor,
  runEventConsumer,
  type Subscription,
  tableOutboxSource,
} from "@prefix-guard/bus";
import { ConflictError, UnavailableError } from "@prefix-guard/errors";
import { newEventId, sha256Hex, Topics } from "@prefix-guard/events";
import { type RunningGrpcServer, startGrpcServer } from "@prefix-guard/grpc";
import type { Logger } from "@prefix-guard/logging";
import { cacheMonitorMigrations } from "@prefix-guard/migrations/cache-monitor";
import { grpcServerSecurity, openServiceDatabase } from "@prefix-guard/runtime";
import { createMetricsRegistry, type MetricsServer, startMetricsServer } from "@prefix-guard/telemetry";
import { cacheMonitorRegistration } from "./adapters/grpc/cache-monitor-grpc";
import { CacheMonitorMetrics, type MetricsRegistry } from "./adapters/metrics/cache-monitor-metrics";
import { MonitorStore } from "./adapters/mysql/monitor-store";
import { outboxMonitorEventSink } from "./adapters/mysql/outbox-monitor-events";
import { CacheMonitor } from "./application/cache-monitor";
import { decodePrefixEvent, decodeUsageEvent } from "./application/monitor-events";
import { attributionThresholdsOf, type CacheMonitorConfig, collapseThresholdsOf, priceBookOf } from "./config";

export interface RunningCacheMonitor {
  readonly address: string;
  readonly monitor: CacheMonitor;
  /** The Prometheus registry (served on METRICS_PORT when > 0). */
  readonly metrics: MetricsRegistry;
  /** Bound port of /metrics, or null when METRICS_PORT is 0. */
  readonly metricsPort: number | null;
  stop(): Promise<void>;
}

/**
 * Composition root: DB, the monitor, its consumers of prompt.prefix.v1 and llm.usage.v1, the
 * outbox relay (cache.collapse.v1, llm.usage.v1), gRPC and the Prometheus endpoint.
 */
export async function startCacheMonitor(
  config: CacheMonitorConfig,
  deps: { bus: MessageBus; logger: Logger; now?: () => number },
): Promise<RunningCacheMonitor> {
  const { bus, logger } = deps;
  const now = deps.now ?? Date.now;
  const db = await openServiceDatabase(config.DATABASE_URL, cacheMonitorMigrations, logger);
  const prices = priceBookOf(config);
  const registry = createMetricsRegistry("cache-monitor");
  const metrics = new CacheMonitorMetrics(registry, prices.currency);
  const monitor = new CacheMonitor({
    store: new MonitorStore(db),
    events: outboxMonitorEventSink(now),
    prices,
    thresholds: collapseThresholdsOf(config),
    attributionThresholds: attributionThresholdsOf(config),
    now,
    newEventId: () => newEventId(now()),
    sha256: sha256Hex,
    logger,
    observer: metrics,
  });
  const relay = new OutboxRelay({
    source: tableOutboxSource(db),
    bus,
    lock: relayLockFor(db, "prefix-guard:cache-monitor:relay"),
    logger,
    now,
  });
  relay.start();
  const consumers: Subscription[] = [];
  let metricsServer: MetricsServer | null = null;
  let server: RunningGrpcServer;
  try {
    consumers.push(
      await runEventConsumer({
        bus,
        topic: Topics.promptPrefix,
        groupId: `${config.CONSUMER_GROUP}.prefix`,
        logger,
        decode: decodePrefixEvent,
        onOutcome: (outcome, count) => metrics.eventConsumed(Topics.promptPrefix, outcome, count),
        partitionsConcurrently: config.CONSUMER_PARTITIONS_CONCURRENTLY,
        apply: async (events) => {
          for (const event of events) {
            metrics.eventAged(Topics.promptPrefix, now() - event.occurredAtMs);
            const outcome = await monitor.applyPrefixEvent(event);
            if (outcome.kind === "applied" && outcome.reexplainedCollapses > 0) relay.notify();
          }
        },
      }),
    );
    consumers.push(
      await runEventConsumer({
        bus,
        topic: Topics.llmUsage,
        groupId: `${config.CONSUMER_GROUP}.usage`,
        logger,
        decode: decodeUsageEvent,
        onOutcome: (outcome, count) => metrics.eventConsumed(Topics.llmUsage, outcome, count),
        partitionsConcurrently: config.CONSUMER_PARTITIONS_CONCURRENTLY,
        apply: async (events) => {
          for (const event of events) {
            metrics.eventAged(Topics.llmUsage, now() - event.occurredAtMs);
            try {
              const result = await monitor.applyUsageEvent(event);
              if (!result.duplicate && result.collapse !== null) relay.notify();
            } catch (error) {
              // An event id reused for another call never becomes applicable: retrying would block the partition.
              if (error instanceof ConflictError) throw new PoisonMessageError(error.message, { cause: error });
              throw error;
            }
          }
        },
      }),
    );
    if (config.METRICS_PORT > 0)
      metricsServer = await startMetricsServer(registry, config.GRPC_HOST, config.METRICS_PORT);
    server = await startGrpcServer({
      ...grpcServerSecurity(config),
      host: config.GRPC_HOST,
      port: config.GRPC_PORT,
      logger,
      // A usage record is small; the provider's diagnostics JSON is the only open-ended part.
      maxReceiveMessageBytes: 1024 * 1024,
      metrics: registry,
      services: [cacheMonitorRegistration(monitor, () => relay.notify())],
    });
  } catch (error) {
    await Promise.allSettled(consumers.map((c) => c.stop()));
    await relay.stop();
    await metricsServer?.close();
    await db.destroy();
    throw new UnavailableError("cache-monitor could not start (consumers, metrics endpoint or gRPC server)", {
      cause: error,
    });
  }
  logger.info(
    { address: server.address, metrics_port: metricsServer?.port ?? null, currency: prices.currency },
    "cache-monitor serving",
  );
  return {
    address: server.address,
    monitor,
    metrics: registry,
    metricsPort: metricsServer?.port ?? null,
    async stop() {
      await server.shutdown(config.SHUTDOWN_GRACE_MS);
      for (const consumer of consumers) await consumer.stop();
      await relay.stop();
      await metricsServer?.close();
      await db.destroy();
    },
  };
}
