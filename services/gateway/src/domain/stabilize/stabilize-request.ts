// Stabilize mode's one entry point: a parsed request body in, the copy to send upstream out (or
// null: send the client's bytes unchanged), with the rules that fired and the session's next state.
//
// A changed body is written with JSON.stringify: keys stay in the client's order except inside the
// tool schemas tool_schema sorts, and the JSON is compact. Re-serializing must not change what the
// body means, so a body holding a number JSON.stringify would not write back as the client wrote it
// (an integer beyond 2^53, such as a 64-bit id, or one that overflowed to Infinity) is left
// entirely as it was: no rule applies.

import type { ProviderCatalogue } from "@prefix-guard/providers";
import { isJsonRecord, type JsonRecord } from "../json-record";
import type { RouteName } from "../routes";
import { placeCacheBreakpoints } from "./breakpoints";
import type { StabilizationRule } from "./rules";
import { EMPTY_STABILIZATION_STATE, type SessionStabilizationState } from "./state";
import { canonicalToolOrder, canonicalToolSchemas } from "./tools";
import type { VolatilePattern } from "./volatile-patterns";
import { type NoticeLocaleSetting, stabilizeVolatileSpans } from "./volatile-spans";

export interface StabilizeOptions {
  /** GATEWAY_VOLATILE_PATTERNS, compiled; [] turns volatile_spans off. */
  readonly volatilePatterns: readonly VolatilePattern[];
  /** GATEWAY_NOTICE_LOCALE. */
  readonly noticeLocale: NoticeLocaleSetting;
  /** The provider catalogue (breakpoints: which models take which markers, and their minimums). */
  readonly catalogue: ProviderCatalogue;
}

export interface StabilizeResult {
  /** The body to send, or null when no rule changed it (send the client's bytes as they were). */
  readonly body: JsonRecord | null;
  /** Rules that changed the body, in the order they ran. */
  readonly fired: readonly StabilizationRule[];
  /** Keep for the session's next request. */
  readonly nextState: SessionStabilizationState;
}

/** Whether JSON.stringify would write every number of `value` back with the value the client sent. */
export function numbersSurviveReserialization(value: unknown): boolean {
  if (typeof value === "number")
    return Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value));
  if (Array.isArray(value)) return value.every(numbersSurviveReserialization);
  if (isJsonRecord(value)) {
    for (const key in value) if (!numbersSurviveReserialization(value[key])) return false;
  }
  return true;
}

/**
 * Applies the rules to `body` (never mutated): tool_order, tool_schema, volatile_spans, then
 * breakpoints (last, so its size estimate sees the final body and its "none placed" test the
 * client's own).
 */
export function stabilizeRequest(
  route: RouteName,
  body: unknown,
  state: SessionStabilizationState | null,
  options: StabilizeOptions,
): StabilizeResult {
  const previous = state ?? EMPTY_STABILIZATION_STATE;
  if (!isJsonRecord(body) || !numbersSurviveReserialization(body))
    return { body: null, fired: [], nextState: previous };
  const fired: StabilizationRule[] = [];
  let next: JsonRecord = body;

  if (Array.isArray(next.tools)) {
    const ordered = canonicalToolOrder(route, next.tools);
    if (ordered !== null) {
      next = { ...next, tools: ordered };
      fired.push("tool_order");
    }
    const schemas = canonicalToolSchemas(route, next.tools as unknown[]);
    if (schemas !== null) {
      next = { ...next, tools: schemas };
      fired.push("tool_schema");
    }
  }

  const volatile = stabilizeVolatileSpans(route, next, previous, options.volatilePatterns, options.noticeLocale);
  if (volatile.fired) {
    next = volatile.body;
    fired.push("volatile_spans");
  }

  const marked = placeCacheBreakpoints(route, next, options.catalogue);
  if (marked !== null) {
    next = marked;
    fired.push("breakpoints");
  }

  return { body: fired.length === 0 ? null : next, fired, nextState: volatile.state };
}

/** The bytes of a body stabilizeRequest changed. */
export function serializeStabilizedBody(body: JsonRecord): Buffer {
  return Buffer.from(JSON.stringify(body), "utf8");
}
