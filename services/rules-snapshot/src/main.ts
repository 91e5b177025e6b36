import { createLogger } from "@prefix-guard/logging";
import { defaultTopicSpecs, openBus, runUntilSignal } from "@prefix-guard/runtime";
import { startTelemetry } from "@prefix-guard/telemetry";
import { loadRulesSnapshotConfig } from "./config";
import { startRulesSnapshot } from "./service";

const config = loadRulesSnapshotConfig();
const logger = createLogger({ service: "rules-snapshot", level: config.LOG_LEVEL });
const telemetry = startTelemetry({
  serviceName: "rules-snapshot",
  otlpEndpoint: config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
});
const bus = await openBus(config, "rules-snapshot", defaultTopicSpecs(), logger);
const service = await startRulesSnapshot(config, { bus: bus.bus, logger });
runUntilSignal(
  async () => {
    await service.stop();
    await bus.close();
    await telemetry.shutdown();
  },
  logger,
  config.SHUTDOWN_GRACE_MS,
);
