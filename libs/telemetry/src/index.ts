export type { MetricsServer } from "./metrics";
export { createMetricsRegistry, startMetricsServer } from "./metrics";
export type { Telemetry, TelemetryOptions } from "./tracing";
export { startTelemetry } from "./tracing";
