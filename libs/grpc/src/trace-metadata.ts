import type { Metadata } from "@grpc/grpc-js";
import { type Context, context, propagation, ROOT_CONTEXT } from "@opentelemetry/api";

/** W3C trace context into call metadata (done by hand: ESM bypasses require-hook instrumentation). */
export function injectTraceMetadata(metadata: Metadata, ctx: Context = context.active()): Metadata {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  for (const [key, value] of Object.entries(carrier)) metadata.set(key, value);
  return metadata;
}

export function extractTraceContext(metadata: Metadata): Context {
  const carrier: Record<string, string> = {};
  for (const key of ["traceparent", "tracestate", "baggage"]) {
    const value = metadata.get(key)[0];
    if (typeof value === "string") carrier[key] = value;
  }
  return propagation.extract(ROOT_CONTEXT, carrier);
}
