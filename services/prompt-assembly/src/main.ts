import { createLogger } from "@prefix-guard/logging";
import { defaultTopicSpecs, openBus, runUntilSignal } from "@prefix-guard/runtime";
import { startTelemetry } from "@prefix-guard/telemetry";
import { loadPromptAssemblyConfig } from "./config";
import { startPromptAssembly } from "./service";

const config = loadPromptAssemblyConfig();
const logger = createLogger({ service: "prompt-assembly", level: config.LOG_LEVEL });
const telemetry = startTelemetry({
  serviceName: "prompt-assembly",
  otlpEndpoint: config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
});
const bus = await openBus(config, "prompt-assembly", defaultTopicSpecs(), logger);
const service = await startPromptAssembly(config, { bus: bus.bus, logger });
runUntilSignal(
  async () => {
    await service.stop();
    await bus.close();
    await telemetry.shutdown();
  },
  logger,
  config.SHUTDOWN_GRACE_MS,
);
