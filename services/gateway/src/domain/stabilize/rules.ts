// The stabilization rules of stabilize mode (docs/gateway.md "Stabilize mode"), how a response says
// which ones fired, and the metric that counts them. Each rule only ever changes the request copy
// sent upstream; a rule that cannot apply safely leaves the body as the client wrote it.

/**
 * - tool_order: tool definitions sorted by name;
 * - tool_schema: the tools' JSON Schemas with their keys sorted recursively;
 * - breakpoints: cache breakpoints placed at stable boundaries on a body that had none;
 * - volatile_spans: volatile spans of the system prompt pinned to the session's first value, and the
 *   <date-change> notice on the user message that crossed a date change.
 */
export type StabilizationRule = "tool_order" | "tool_schema" | "breakpoints" | "volatile_spans";

/** Every rule, in the order they are applied and reported. */
export const STABILIZATION_RULES: readonly StabilizationRule[] = [
  "tool_order",
  "tool_schema",
  "volatile_spans",
  "breakpoints",
];

/** Response header naming the rules that changed the request, e.g. `tool_order,volatile_spans`. */
export const STABILIZED_HEADER = "x-prefix-guard-stabilized";

/** Counter of requests each rule changed, labelled `rule`. */
export const STABILIZED_METRIC = "prefixguard_gateway_stabilized_total";

/** Where a fired rule is counted (the metrics adapter implements it with STABILIZED_METRIC). */
export interface StabilizationRecorder {
  stabilized(rule: StabilizationRule): void;
}

/** The STABILIZED_HEADER value for the rules that fired, in STABILIZATION_RULES order; null when none did. */
export function stabilizedHeaderValue(fired: readonly StabilizationRule[]): string | null {
  const names = STABILIZATION_RULES.filter((rule) => fired.includes(rule));
  return names.length === 0 ? null : names.join(",");
}

/** `headers` (a response's, about to be written) with STABILIZED_HEADER set when a rule fired. */
export function withStabilizedHeader<Headers extends Record<string, string | string[] | number>>(
  headers: Headers,
  value: string | null,
): Headers {
  if (value !== null) (headers as Record<string, string>)[STABILIZED_HEADER] = value;
  return headers;
}
