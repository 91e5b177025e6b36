// Envelopes of the topics cache-monitor reads (prompt.prefix.v1, llm.usage.v1) and writes
// (cache.collapse.v1, llm.usage.v1): decoding with the envelope invariants checked, so a consumer
// never applies a half-formed event (a ValidationError sends it to the DLQ), and building the
// envelopes it publishes.

import { ValidationError } from "@prefix-guard/errors";
import { decodeEnvelope } from "@prefix-guard/events";
import { MAX_ID_CHARS } from "@prefix-guard/events/ids";
import type { CacheCollapsed, CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
import { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import { LlmUsageEvent, type UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
import { trafficSourceOf } from "../domain/validation";

/** prompt-assembly writes schema 1 (FingerprintObserved's trace fields were added to it additively). */
export const PREFIX_EVENT_SCHEMA_VERSION = 1;
const USAGE_EVENT_SCHEMA_VERSION = 1;
const COLLAPSE_EVENT_SCHEMA_VERSION = 1;

const USAGE_RECORDED_TYPE = "UsageRecorded";
const CACHE_COLLAPSED_TYPE = "CacheCollapsed";

export type PrefixPayload = NonNullable<PrefixEvent["payload"]>;
export type ValidPrefixEvent = PrefixEvent & { payload: PrefixPayload };
export type ValidUsageEvent = LlmUsageEvent & { payload: NonNullable<LlmUsageEvent["payload"]> };

const prefixTypeNames: Record<PrefixPayload["$case"], string> = {
  observed: "FingerprintObserved",
  changed: "PrefixChanged",
};

function invalid(field: string, message: string): ValidationError {
  return new ValidationError(field, message, { reason: "invalid_envelope" });
}

function requireEnvelopeIds(event: { eventId: string; sessionId: string }): void {
  if (event.eventId.trim().length === 0) throw invalid("event_id", "must not be empty");
  if (event.eventId.length > 64) throw invalid("event_id", "must be at most 64 characters");
  if (event.sessionId.trim().length === 0) throw invalid("session_id", "must not be empty");
  if (event.sessionId.length > MAX_ID_CHARS) throw invalid("session_id", `must be at most ${MAX_ID_CHARS} characters`);
}

export function decodePrefixEvent(bytes: Uint8Array): ValidPrefixEvent {
  const event = decodeEnvelope(PrefixEvent, bytes, "prefix_event");
  if (event.schemaVersion !== PREFIX_EVENT_SCHEMA_VERSION)
    throw new ValidationError("schema_version", `unsupported schema version ${event.schemaVersion}`, {
      reason: "unknown_version",
    });
  const payload = event.payload;
  if (payload === undefined) throw invalid("payload", "envelope has no payload");
  if (event.type !== prefixTypeNames[payload.$case])
    throw invalid("type", `type ${JSON.stringify(event.type)} does not match payload ${payload.$case}`);
  requireEnvelopeIds(event);
  if (event.requestId.trim().length === 0) throw invalid("request_id", "must not be empty");
  if (event.requestId.length > MAX_ID_CHARS) throw invalid("request_id", `must be at most ${MAX_ID_CHARS} characters`);
  requireGatewayFacts(payload);
  return { ...event, payload };
}

const BLOCK_KINDS = new Set(["tools", "system", "message"]);
/** As cm_prefix_change.changed_block_role is wide; a role is a word ("user", "function_call_output"). */
const MAX_ROLE_CHARS = 64;

function requireBlock(block: { kind: string; role: string }, field: string): void {
  if (!BLOCK_KINDS.has(block.kind)) throw invalid(`${field}.kind`, "must be tools, system or message");
  if (block.role.length > MAX_ROLE_CHARS)
    throw invalid(`${field}.role`, `must be at most ${MAX_ROLE_CHARS} characters`);
}

/** The gateway's facts (source, cut, first changed block) as cache-monitor stores them. */
function requireGatewayFacts(payload: PrefixPayload): void {
  trafficSourceOf(payload.value.source, `${payload.$case}.source`);
  if (payload.$case === "observed") {
    for (const [index, block] of (payload.value.cut?.blocks ?? []).entries())
      requireBlock(block, `observed.cut.blocks[${index}]`);
  } else if (payload.value.firstChangedBlock !== undefined) {
    requireBlock(payload.value.firstChangedBlock, "changed.first_changed_block");
  }
}

/** Only the envelope is checked here; the usage itself is validated like a RecordUsage request. */
export function decodeUsageEvent(bytes: Uint8Array): ValidUsageEvent {
  const event = decodeEnvelope(LlmUsageEvent, bytes, "llm_usage_event");
  if (event.schemaVersion !== USAGE_EVENT_SCHEMA_VERSION)
    throw new ValidationError("schema_version", `unsupported schema version ${event.schemaVersion}`, {
      reason: "unknown_version",
    });
  const payload = event.payload;
  if (payload === undefined) throw invalid("payload", "envelope has no payload");
  if (event.type !== USAGE_RECORDED_TYPE)
    throw invalid("type", `type ${JSON.stringify(event.type)} does not match payload ${payload.$case}`);
  requireEnvelopeIds(event);
  return { ...event, payload };
}

export function usageRecordedEvent(args: {
  eventId: string;
  sessionId: string;
  occurredAtMs: number;
  usage: UsageRecorded;
}): LlmUsageEvent {
  return {
    eventId: args.eventId,
    sessionId: args.sessionId,
    occurredAtMs: args.occurredAtMs,
    schemaVersion: USAGE_EVENT_SCHEMA_VERSION,
    type: USAGE_RECORDED_TYPE,
    payload: { $case: "usage", value: args.usage },
  };
}

/**
 * A collapse is published when detected and again whenever the late prefix join changes its
 * explanation; consumers keep the latest per (session_id, request_id, called_at_ms).
 */
export function cacheCollapsedEvent(args: {
  eventId: string;
  sessionId: string;
  occurredAtMs: number;
  collapse: CacheCollapsed;
}): CacheCollapseEvent {
  return {
    eventId: args.eventId,
    sessionId: args.sessionId,
    occurredAtMs: args.occurredAtMs,
    schemaVersion: COLLAPSE_EVENT_SCHEMA_VERSION,
    type: CACHE_COLLAPSED_TYPE,
    payload: { $case: "collapsed", value: args.collapse },
  };
}
