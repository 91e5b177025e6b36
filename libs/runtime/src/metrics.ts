import type { Logger } from "@prefix-guard/logging";
import { createMetricsRegistry, startMetricsServer } from "@prefix-guard/telemetry";
import { Counter, Histogram, type Registry } from "prom-client";

export interface ServiceMetrics {
  readonly registry: Registry;
  /** Delay from an event's occurred_at to its application here: the consumer's lag, in time. */
  readonly eventApplyDelay: Histogram<"consumer">;
  readonly eventsConsumed: Counter<"consumer" | "outcome">;
  /** Bound port of /metrics, or null when METRICS_PORT is 0. */
  readonly port: number | null;
  close(): Promise<void>;
}

/** A registry with the metrics every service shares, served on METRICS_PORT when it is not 0. */
export async function openMetrics(
  service: string,
  config: { GRPC_HOST: string; METRICS_PORT: number },
  logger: Logger,
): Promise<ServiceMetrics> {
  const registry = createMetricsRegistry(service);
  const eventApplyDelay = new Histogram({
    name: "event_apply_delay_seconds",
    help: "Time from an event's occurred_at to its application by this consumer.",
    labelNames: ["consumer"] as const,
    buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
    registers: [registry],
  });
  const eventsConsumed = new Counter({
    name: "events_consumed_total",
    help: "Events handled by this consumer, by outcome (applied, dead_lettered).",
    labelNames: ["consumer", "outcome"] as const,
    registers: [registry],
  });
  const server =
    config.METRICS_PORT > 0 ? await startMetricsServer(registry, config.GRPC_HOST, config.METRICS_PORT) : undefined;
  if (server) logger.info({ port: server.port }, "metrics on /metrics");
  return { registry, eventApplyDelay, eventsConsumed, port: server?.port ?? null, close: async () => server?.close() };
}
