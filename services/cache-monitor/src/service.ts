import { type MessageBus, tableOutboxSource } from "@prefix-guard/bus";
import { ConflictError, UnavailableError } from "@prefix-guard/errors";
import { newEventId, sha256Hex, Topics } from "@prefix-guard/events";
import type { Logger } from "@prefix-guard/logging";
import { cacheMonitorMigrations } from "@prefix-guard/migrations/cache-monitor";
import { loadProviderCatalogue } from "@prefix-guard/providers/load";
import { ServiceKit } from "@prefix-guard/runtime";
import { cacheMonitorRegistration } from "./adapters/grpc/cache-monitor-grpc";
import { CacheMonitorMetrics, type MetricsRegistry } from "./adapters/metrics/cache-monitor-metrics";
import { MonitorStore } from "./adapters/mysql/monitor-store";
import { outboxMonitorEventSink } from "./adapters/mysql/outbox-monitor-events";
import { BuildArrivals } from "./application/build-arrivals";
import { BUILD_POLL_MS, CacheMonitor } from "./application/cache-monitor";
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
  const { logger } = deps;
  const now = deps.now ?? Date.now;
  const kit = await ServiceKit.open("cache-monitor", config, {
    migrations: cacheMonitorMigrations,
    bus: deps.bus,
    logger,
    now,
  });
  const started = await kit
    .starting(async () => {
      const catalogue = loadProviderCatalogue(config.PROVIDER_CATALOGUE_FILE);
      const prices = priceBookOf(config, catalogue);
      const registry = kit.metrics.registry;
      const metrics = new CacheMonitorMetrics(registry, prices, config.METRICS_WORKSPACE_LABELS);
      const monitor = new CacheMonitor({
        store: new MonitorStore(kit.db),
        events: outboxMonitorEventSink(now),
        prices,
        catalogue,
        thresholds: collapseThresholdsOf(config),
        attributionThresholds: attributionThresholdsOf(config),
        now,
        newEventId: () => newEventId(now()),
        sha256: sha256Hex,
        logger,
        observer: metrics,
        buildWait: { arrivals: new BuildArrivals(), timeoutMs: config.USAGE_BUILD_WAIT_MS, pollMs: BUILD_POLL_MS },
      });
      const relay = kit.startRelay({ source: tableOutboxSource(kit.db) });
      await kit.consume({
        topic: Topics.promptPrefix,
        groupId: `${config.CONSUMER_GROUP}.prefix`,
        decode: decodePrefixEvent,
        apply: async (events) => {
          for (const event of events) {
            const outcome = await monitor.applyPrefixEvent(event);
            if (outcome.kind === "applied" && outcome.reexplainedCollapses > 0) relay.notify();
          }
        },
      });
      await kit.consume({
        topic: Topics.llmUsage,
        groupId: `${config.CONSUMER_GROUP}.usage`,
        decode: decodeUsageEvent,
        apply: async (events) => {
          for (const event of events) {
            const result = await monitor.applyUsageEvent(event);
            if (!result.duplicate && result.collapse !== null) relay.notify();
          }
        },
        // An event id reused for another call never becomes applicable: retrying would block the partition.
        isPoison: (error) => error instanceof ConflictError,
      });
      // A usage record is small; the provider's diagnostics JSON is the only open-ended part.
      const server = await kit.serve([cacheMonitorRegistration(monitor, () => relay.notify())], {
        maxReceiveMessageBytes: 1024 * 1024,
      });
      return { server, monitor, registry, currency: prices.currency };
    })
    .catch((error: unknown) => {
      throw new UnavailableError("cache-monitor could not start (consumers, metrics endpoint or gRPC server)", {
        cause: error,
      });
    });
  logger.info({ metrics_port: kit.metrics.port, currency: started.currency }, "cache-monitor prices");
  return {
    address: started.server.address,
    monitor: started.monitor,
    metrics: started.registry,
    metricsPort: kit.metrics.port,
    stop: () => kit.stop(),
  };
}
