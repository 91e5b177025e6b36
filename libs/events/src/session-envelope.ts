import { ValidationError } from "@prefix-guard/errors";
import { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { decodeEnvelope, encodeEnvelope } from "./codec";

/**
 * The version session-events writes. 2: the content of MessageSaved, CompactionCommitted and
 * SessionCreated travels in `sealed` (the session's data key), its plaintext fields left empty.
 */
export const SESSION_EVENT_SCHEMA_VERSION = 2;

/**
 * Versions a reader accepts: 1 (content in plaintext fields) and 2 (content sealed with the
 * session's data key). Old events stay in topics, DLQs and the event store, so 1 is never dropped.
 */
export const READABLE_SESSION_EVENT_SCHEMA_VERSIONS: ReadonlySet<number> = new Set([1, 2]);

export type SessionEventPayload = NonNullable<SessionEvent["payload"]>;
export type SessionEventType = SessionEventPayload["$case"];

const typeNames: Record<SessionEventType, string> = {
  sessionCreated: "SessionCreated",
  messageSaved: "MessageSaved",
  messageDeleted: "MessageDeleted",
  compactionCommitted: "CompactionCommitted",
  sessionDeleted: "SessionDeleted",
  sideTaskPromoted: "SideTaskPromoted",
};

export function sessionEventType(payload: SessionEventPayload): string {
  return typeNames[payload.$case];
}

export function encodeSessionEvent(event: SessionEvent): Uint8Array {
  return encodeEnvelope(SessionEvent, event);
}

/**
 * Decodes and checks the envelope invariants, so a consumer never applies a half-formed event:
 * a known schema version, a payload, `type` equal to the payload case, seq >= 1.
 */
export function decodeSessionEvent(bytes: Uint8Array): SessionEvent & { payload: SessionEventPayload } {
  const event = decodeEnvelope(SessionEvent, bytes, "session_event");
  if (!READABLE_SESSION_EVENT_SCHEMA_VERSIONS.has(event.schemaVersion)) {
    throw new ValidationError("schema_version", `unsupported schema version ${event.schemaVersion}`, {
      reason: "unknown_version",
    });
  }
  const payload = event.payload;
  if (payload === undefined)
    throw new ValidationError("payload", "envelope has no payload", { reason: "invalid_envelope" });
  if (event.type !== typeNames[payload.$case]) {
    throw new ValidationError("type", `type ${JSON.stringify(event.type)} does not match payload ${payload.$case}`, {
      reason: "invalid_envelope",
    });
  }
  if (event.sessionId.length === 0)
    throw new ValidationError("session_id", "must not be empty", { reason: "invalid_envelope" });
  if (!Number.isSafeInteger(event.seq) || event.seq < 1)
    throw new ValidationError("seq", "must be >= 1", { reason: "invalid_envelope" });
  if (event.eventId.length === 0)
    throw new ValidationError("event_id", "must not be empty", { reason: "invalid_envelope" });
  return { ...event, payload };
}
