export { startTelemetry } from "./tracing";
export type { Telemetry, TelemetryOptions } from "./tracing";
export { createMetricsRegistry, startMetricsServer } from "./metrics";
export type { MetricsServer } from "./metrics";
