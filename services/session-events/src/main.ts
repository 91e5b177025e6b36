import { createLogger } from "@prefix-guard/logging";
import { defaultTopicSpecs, openBus, runUntilSignal } from "@prefix-guard/runtime";
import { startTelemetry } from "@prefix-guard/telemetry";
import { loadSessionEventsConfig } from "./config";
import { startSessionEvents } from "./service";

const config = loadSessionEventsConfig();
const logger = createLogger({ service: "session-events", level: config.LOG_LEVEL });
const telemetry = startTelemetry({
  serviceName: "session-events",
  otlpEndpoint: config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
});
const bus = await openBus(config, "session-events", defaultTopicSpecs(), logger);
const service = await startSessionEvents(config, { bus: bus.bus, logger });
runUntilSignal(
  async () => {
    await service.stop();
    await bus.close();
    await telemetry.shutdown();
  },
  logger,
  config.SHUTDOWN_GRACE_MS,
);
