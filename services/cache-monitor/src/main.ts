import { createLogger } from "@prefix-guard/logging";
import { defaultTopicSpecs, openBus, runUntilSignal } from "@prefix-guard/runtime";
import { startTelemetry } from "@prefix-guard/telemetry";
import { loadCacheMonitorConfig } from "./config";
import { startCacheMonitor } from "./service";

const config = loadCacheMonitorConfig();
const logger = createLogger({ service: "cache-monitor", level: config.LOG_LEVEL });
const telemetry = startTelemetry({
  serviceName: "cache-monitor",
  otlpEndpoint: config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
});
const bus = await openBus(config, "cache-monitor", defaultTopicSpecs(), logger);
const service = await startCacheMonitor(config, { bus: bus.bus, logger });
runUntilSignal(
  async () => {
    await service.stop();
    await bus.close();
    await telemetry.shutdown();
  },
  logger,
  config.SHUTDOWN_GRACE_MS,
);
