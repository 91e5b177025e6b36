import { propagation } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { NodeSDK } from "@opentelemetry/sdk-node";
import {
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace";

export interface TelemetryOptions {
  readonly serviceName: string;
  /** OTLP/HTTP traces endpoint (e.g. http://127.0.0.1:4318/v1/traces); unset = no export. */
  readonly otlpEndpoint?: string | undefined;
  /** Tests pass an InMemorySpanExporter to assert spans. */
  readonly exporter?: SpanExporter;
}

export interface Telemetry {
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry SDK. gRPC and Kafka spans are made by libs/grpc and libs/bus with W3C
 * context in metadata/headers, so tracing works under ESM without require-hook instrumentation.
 */
export function startTelemetry(options: TelemetryOptions): Telemetry {
  const processors: SpanProcessor[] = [];
  if (options.exporter) processors.push(new SimpleSpanProcessor({ exporter: options.exporter }));
  if (options.otlpEndpoint)
    processors.push(
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: options.otlpEndpoint, timeoutMillis: 5_000 }) }),
    );
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const sdk = new NodeSDK({
    serviceName: options.serviceName,
    spanProcessors: processors,
    instrumentations: [],
    textMapPropagator: new W3CTraceContextPropagator(),
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
