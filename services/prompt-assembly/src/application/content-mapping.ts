import { sealedContentOf } from "@prefix-guard/events";

// Converts between the wire contract (proto ContentPart, Role, SessionKind) and the domain model,
// and between the domain content and its stored JSON. Kept apart from the projection so the rules
// of "what a part becomes" are in one place and testable without a database.

import { canonicalJson } from "@prefix-guard/canonical-json";
import { InternalError, unhandledCase, ValidationError } from "@prefix-guard/errors";
import { MAX_ID_CHARS } from "@prefix-guard/events/ids";
import { type ContentPart as ProtoContentPart, Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import type { ContentPart, Role as DomainRole, SessionView } from "../domain/model";
import type { ProjectedEvent } from "../domain/session-projection";

/** Proto parts to domain parts, byte for byte. An empty oneof is rejected: it cannot be sent. */
export function contentFromProto(parts: readonly ProtoContentPart[], field = "content"): ContentPart[] {
  return parts.map((wrapper, index) => partFromProto(wrapper, `${field}[${index}]`));
}

function partFromProto(wrapper: ProtoContentPart, field: string): ContentPart {
  const part = wrapper.part;
  if (part === undefined) throw new ValidationError(field, "content part has no value");
  switch (part.$case) {
    case "text":
      return { type: "text", text: part.value.text };
    case "image":
      return { type: "image", mediaType: part.value.mediaType, url: part.value.url };
    case "toolCall":
      return {
        type: "tool_call",
        callId: part.value.callId,
        name: part.value.name,
        argumentsJson: part.value.argumentsJson,
      };
    case "toolResult":
      return { type: "tool_result", callId: part.value.callId, text: part.value.text, isError: part.value.isError };
  }
}

/** Domain parts to proto parts (the inverse of contentFromProto). */
export function contentToProto(parts: readonly ContentPart[]): ProtoContentPart[] {
  return parts.map(partToProto);
}

function partToProto(part: ContentPart): ProtoContentPart {
  switch (part.type) {
    case "text":
      return { part: { $case: "text", value: { text: part.text } } };
    case "image":
      return { part: { $case: "image", value: { mediaType: part.mediaType, url: part.url } } };
    case "tool_call":
      return {
        part: { $case: "toolCall", value: { callId: part.callId, name: part.name, argumentsJson: part.argumentsJson } },
      };
    case "tool_result":
      return { part: { $case: "toolResult", value: { callId: part.callId, text: part.text, isError: part.isError } } };
  }
}

const ROLES = new Map<Role, DomainRole>([
  [Role.ROLE_USER, "user"],
  [Role.ROLE_ASSISTANT, "assistant"],
  [Role.ROLE_TOOL, "tool"],
  [Role.ROLE_SYSTEM, "system"],
]);

/** @throws ValidationError for ROLE_UNSPECIFIED and values this version does not know. */
export function roleFromProto(role: Role, field = "role"): DomainRole {
  const name = ROLES.get(role);
  if (name === undefined) throw new ValidationError(field, `unknown role ${String(role)}`);
  return name;
}

/** UNSPECIFIED means MAIN, as session-events applies it; unknown future kinds are rejected. */
export function kindFromProto(kind: SessionKind, field = "kind"): SessionView["kind"] {
  switch (kind) {
    case SessionKind.SESSION_KIND_UNSPECIFIED:
    case SessionKind.SESSION_KIND_MAIN:
      return "main";
    case SessionKind.SESSION_KIND_SIDE:
      return "side";
    case SessionKind.SESSION_KIND_EMBED:
      return "embed";
    default:
      throw new ValidationError(field, `unknown session kind ${String(kind)}`);
  }
}

/** Domain content as stored in pa_message.content_json. */
export function storedContentJson(parts: readonly ContentPart[]): string {
  return canonicalJson(parts, "content");
}

const STORED_ROLES: ReadonlySet<string> = new Set(["user", "assistant", "tool", "system"]);

export function storedRole(value: unknown): DomainRole {
  if (typeof value === "string" && STORED_ROLES.has(value)) return value as DomainRole;
  throw new InternalError(`stored role ${JSON.stringify(value)} is not a role`);
}

/**
 * Reads content_json back, checking every field: the row was written by this service, so a bad
 * shape means corruption and must not be re-shaped silently into a different request.
 */
export function parseStoredContent(json: string, where: string): ContentPart[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw new InternalError(`${where}: stored content is not JSON`, { cause: error });
  }
  if (!Array.isArray(parsed)) throw new InternalError(`${where}: stored content is not an array`);
  return parsed.map((value, index) => storedPart(value, `${where}[${index}]`));
}

function storedPart(value: unknown, where: string): ContentPart {
  if (typeof value !== "object" || value === null) throw new InternalError(`${where}: not an object`);
  const record = value as Record<string, unknown>;
  const text = (key: string): string => {
    const member = record[key];
    if (typeof member !== "string") throw new InternalError(`${where}.${key}: not a string`);
    return member;
  };
  switch (record.type) {
    case "text":
      return { type: "text", text: text("text") };
    case "image":
      return { type: "image", mediaType: text("mediaType"), url: text("url") };
    case "tool_call":
      return { type: "tool_call", callId: text("callId"), name: text("name"), argumentsJson: text("argumentsJson") };
    case "tool_result": {
      if (typeof record.isError !== "boolean") throw new InternalError(`${where}.isError: not a boolean`);
      return { type: "tool_result", callId: text("callId"), text: text("text"), isError: record.isError };
    }
    default:
      throw new InternalError(`${where}.type: unknown part type ${JSON.stringify(record.type)}`);
  }
}

/**
 * A session.events.v1 event in domain terms.
 *
 * @throws ValidationError for an event that can never be applied (no payload, unknown role or
 * kind, an empty content part ...), which the consumer routes to the DLQ; InternalError for an
 * event whose sealed content was not opened (SealedEventOpener) first.
 */
export function projectedEventFromProto(event: SessionEvent): ProjectedEvent {
  if (event.sessionId.length === 0) throw new ValidationError("session_id", "must not be empty");
  if (event.sessionId.length > MAX_ID_CHARS) {
    throw new ValidationError("session_id", `must be at most ${MAX_ID_CHARS} characters`);
  }
  if (!Number.isSafeInteger(event.seq) || event.seq < 1) throw new ValidationError("seq", "must be >= 1");
  // Sealed content is opened first (SealedEventOpener): mapped as it is, the message would be empty.
  if (sealedContentOf(event) !== undefined) {
    throw new InternalError(
      `event ${event.seq} of session ${event.sessionId} was mapped before its content was opened`,
    );
  }
  const envelope = { sessionId: event.sessionId, seq: event.seq, occurredAtMs: event.occurredAtMs };
  const payload = event.payload;
  if (payload === undefined) throw new ValidationError("payload", "event has no payload");
  switch (payload.$case) {
    case "sessionCreated":
      return {
        ...envelope,
        payload: {
          type: "sessionCreated",
          kind: kindFromProto(payload.value.kind, "session_created.kind"),
          timezone: payload.value.timezone,
          inheritedSummary: payload.value.inheritedSummary,
          workspace: payload.value.workspace,
          // Empty in events written before sessions had a locale: the default then was zh-CN.
          locale: payload.value.locale === "en" ? "en" : "zh-CN",
          owner: payload.value.owner,
          scope: payload.value.scope,
        },
      };
    case "messageSaved":
      return {
        ...envelope,
        payload: {
          type: "messageSaved",
          messageId: payload.value.messageId,
          role: roleFromProto(payload.value.role, "message_saved.role"),
          content: contentFromProto(payload.value.content, "message_saved.content"),
          localDate: payload.value.localDate,
        },
      };
    case "messageDeleted":
      return { ...envelope, payload: { type: "messageDeleted", messageId: payload.value.messageId } };
    case "compactionCommitted":
      return {
        ...envelope,
        payload: {
          type: "compactionCommitted",
          generation: payload.value.generation,
          boundaryMessageId: payload.value.boundaryMessageId,
          summary: payload.value.summary,
        },
      };
    case "sessionDeleted":
      return { ...envelope, payload: { type: "sessionDeleted" } };
    case "sideTaskPromoted":
      return { ...envelope, payload: { type: "sideTaskPromoted" } };
    default:
      return unhandledCase(payload, "session event payload");
  }
}
