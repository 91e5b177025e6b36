import type { Logger } from "@prefix-guard/logging";
import { createMetricsRegistry, startMetricsServer } from "@prefix-guard/telemetry";
import { Counter, Histogram, type Registry } from "prom-client";

export interface ServiceMetrics {
  readonly registry: Registry;
  /** Delay from an event's occurred_at to its application here: the consumer's lag, in time. */
  readonly eventApplyDelay: Histogram<"consumer">;
  /** Every event a consumer handled: outcome applied, or dead_lettered (sent to the DLQ). */
  readonly eventsConsumed: Counter<"consumer" | "outcome">;
  /** Bound port of /metrics, or null when METRICS_PORT is 0. */
  readonly port: number | null;
  /**
   * Serves another source's series with the registry's from now on: another thread's registry, whose
   * families the registry does not declare. One source at most; a later call replaces it.
   */
  exposeAlso(render: () => Promise<string>): void;
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
    name: "prefixguard_event_apply_delay_seconds",
    help: "Time from an event's occurred_at to its application by this consumer.",
    labelNames: ["consumer"] as const,
    buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
    registers: [registry],
  });
  const eventsConsumed = new Counter({
    name: "prefixguard_events_consumed_total",
    help: "Events handled by this consumer, by outcome (applied, dead_lettered).",
    labelNames: ["consumer", "outcome"] as const,
    registers: [registry],
  });
  // Declared here, not by the services that read them: every service shows the pipeline's series,
  // at 0 before its first event, so a dashboard or alert never points at a series that is missing.
  let alsoRender: () => Promise<string> = async () => "";
  const server =
    config.METRICS_PORT > 0
      ? await startMetricsServer(registry, config.GRPC_HOST, config.METRICS_PORT, () => alsoRender())
      : undefined;
  if (server) logger.info({ port: server.port }, "metrics on /metrics");
  return {
    registry,
    eventApplyDelay,
    eventsConsumed,
    port: server?.port ?? null,
    exposeAlso: (render) => {
      alsoRender = render;
    },
    close: async () => server?.close(),
  };
}
