export { BoundedLabelValues, OTHER_LABEL_VALUE } from "./bounded-label";
export type { MetricsServer } from "./metrics";
export {
  combinedMetricsText,
  createMetricsRegistry,
  startCombinedMetricsServer,
  startMetricsServer,
} from "./metrics";
export type { Telemetry, TelemetryOptions } from "./tracing";
export { startTelemetry } from "./tracing";
