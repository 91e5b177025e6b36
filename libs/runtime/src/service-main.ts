import type { MessageBus } from "@prefix-guard/bus";
import { createLogger, type Logger } from "@prefix-guard/logging";
import { startTelemetry } from "@prefix-guard/telemetry";
import { openBus, type TransportConfig } from "./open-bus";
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
