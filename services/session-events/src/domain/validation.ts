import { ValidationError } from "@prefix-guard/errors";
import { checkId as checkSharedId, MAX_ID_CHARS, requireId as requireSharedId } from "@prefix-guard/events/ids";
import { checkJsonLimits } from "@prefix-guard/events/json-limits";
import { isValidTimeZone } from "@prefix-guard/events/local-date";
import type { ContentPart } from "@prefix-guard/proto/common/v1/common";
import { SessionKind } from "@prefix-guard/proto/common/v1/common";
import type {
  CommitCompactionRequest,
  CreateSessionRequest,
  DeleteMessageRequest,
  DeleteSessionRequest,
  GetDataKeysRequest,
  GetSessionRequest,
  ListMessagesRequest,
  PromoteSideTaskRequest,
  ReadEventsRequest,
  SaveMessageRequest,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import {
  DATA_KEYS_MAX_IDS,
  DEFAULT_TIMEZONE,
  MAX_CONTENT_PARTS,
  MAX_MEDIA_TYPE_CHARS,
  MAX_MESSAGE_BYTES,
  MAX_SUMMARY_INPUT_CHARS,
  MAX_TOOL_NAME_CHARS,
  MAX_WORKSPACE_CHARS,
  READ_EVENTS_DEFAULT_LIMIT,
  READ_EVENTS_MAX_LIMIT,
} from "./limits";
import { kindName, type MessageRole, roleName, type SessionKindName } from "./model";
import { contentCharCount, serializedMessageBytes } from "./stored-content";
import { codePointLength, isWellFormedText } from "./text";

// Typed commands: what the application layer executes once a request has passed validation.

export interface CreateSessionCommand {
  /** undefined: the service generates one. */
  readonly sessionId: string | undefined;
  readonly owner: string;
  readonly workspace: string;
  readonly timezone: string;
  readonly kind: SessionKindName;
  readonly parentSessionId: string | undefined;
  readonly continuedFromSessionId: string | undefined;
  readonly locale: SessionLocale;
  /** Never stored: scrubbed from an inherited summary. */
  readonly personalTerms: readonly string[];
}

export type SessionLocale = "zh-CN" | "en";

const LOCALES: ReadonlySet<string> = new Set<SessionLocale>(["zh-CN", "en"]);
/** Bounds on what a harness passes as personal terms: a name or an address each, a handful per user. */
const MAX_PERSONAL_TERMS = 100;
const MAX_PERSONAL_TERM_CHARS = 200;

function validateLocale(locale: string): SessionLocale {
  const value = locale.length === 0 ? "zh-CN" : locale;
  if (!LOCALES.has(value))
    throw new ValidationError("locale", `must be "zh-CN" or "en", got ${JSON.stringify(locale)}`);
  return value as SessionLocale;
}

function validatePersonalTerms(terms: readonly string[]): string[] {
  if (terms.length > MAX_PERSONAL_TERMS) {
    throw new ValidationError("personal_terms", `must hold at most ${MAX_PERSONAL_TERMS} terms`);
  }
  return terms.map((term, index) => {
    const field = `personal_terms[${index}]`;
    requireText(term, field);
    const trimmed = term.trim();
    if (trimmed.length === 0) throw new ValidationError(field, "must not be blank");
    if (codePointLength(trimmed) > MAX_PERSONAL_TERM_CHARS) {
      throw new ValidationError(field, `must be at most ${MAX_PERSONAL_TERM_CHARS} characters`);
    }
    return trimmed;
  });
}

export interface SaveMessageCommand {
  readonly sessionId: string;
  readonly role: MessageRole;
  readonly content: readonly ContentPart[];
  readonly thinkingText: string;
  readonly expectedSeq: number | undefined;
  /** Measured once here so the capacity decision and the stored row agree. */
  readonly contentChars: number;
  readonly thinkingChars: number;
  readonly serializedBytes: number;
}

export interface DeleteMessageCommand {
  readonly sessionId: string;
  readonly messageId: string;
  readonly expectedSeq: number | undefined;
}

export interface CommitCompactionCommand {
  readonly sessionId: string;
  readonly expectedGeneration: number;
  readonly boundaryMessageId: string;
  /** As submitted; the application scrubs it with the session's personal terms before storing. */
  readonly summary: string;
  /** From the harness's account data; scrubbed with the ones found in the session, never stored. */
  readonly personalTerms: readonly string[];
}

export interface SessionIdCommand {
  readonly sessionId: string;
}

export interface ReadEventsCommand {
  readonly sessionId: string;
  readonly afterSeq: number;
  readonly limit: number;
}

export interface GetDataKeysCommand {
  /** In request order; a repeated id is answered as often as it is asked. */
  readonly sessionIds: readonly string[];
}

export interface ListMessagesCommand {
  readonly sessionId: string;
  readonly includeDeleted: boolean;
}

type UnknownFields = { readonly [key: number]: readonly Uint8Array[] } | undefined;

/**
 * Protobuf decoding keeps fields this schema does not know in `_unknownFields` instead of failing;
 * a client speaking a newer or wrong schema would otherwise have part of its request silently dropped.
 */
function rejectUnknownFields(message: { readonly _unknownFields?: UnknownFields }, path: string): void {
  const fields = message._unknownFields;
  if (fields === undefined) return;
  for (const [tag, values] of Object.entries(fields)) {
    if (values.length === 0) continue;
    // Keys are wire tags (field number << 3 | wire type); a known number sent with the wrong wire type lands here too.
    const fieldNumber = Number(tag) >>> 3;
    throw new ValidationError(path, `unknown field number ${fieldNumber}`, { reason: "unknown_field" });
  }
}

const REQUEST = "request";

function requireId(value: string, field: string): string {
  return requireSharedId(value, field, MAX_ID_CHARS);
}

function optionalId(value: string, field: string): string | undefined {
  return value.length === 0 ? undefined : checkId(value, field);
}

function checkId(value: string, field: string): string {
  return checkSharedId(value, field, MAX_ID_CHARS);
}

function requireText(value: string, field: string): void {
  if (!isWellFormedText(value)) throw new ValidationError(field, "is not valid UTF-16 (lone surrogate)");
}

function optionalSeq(value: number | undefined, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < 0) throw new ValidationError(field, "must be a non-negative integer");
  return value;
}

export function validateCreateSession(request: CreateSessionRequest): CreateSessionCommand {
  rejectUnknownFields(request, REQUEST);
  const owner = requireId(request.owner, "owner");
  requireText(request.workspace, "workspace");
  if (codePointLength(request.workspace) > MAX_WORKSPACE_CHARS) {
    throw new ValidationError("workspace", `must be at most ${MAX_WORKSPACE_CHARS} characters`);
  }
  const timezone = request.timezone.length === 0 ? DEFAULT_TIMEZONE : request.timezone;
  if (!isValidTimeZone(timezone))
    throw new ValidationError("timezone", `${JSON.stringify(timezone)} is not an IANA time zone`);
  const kind = kindName(
    request.kind === SessionKind.SESSION_KIND_UNSPECIFIED ? SessionKind.SESSION_KIND_MAIN : request.kind,
  );
  if (kind === undefined) throw new ValidationError("kind", `unknown session kind ${request.kind}`);
  const parentSessionId = optionalId(request.parentSessionId, "parent_session_id");
  if (kind === "side" && parentSessionId === undefined)
    throw new ValidationError("parent_session_id", "is required for a side task");
  const sessionId = optionalId(request.sessionId, "session_id");
  const continuedFromSessionId = optionalId(request.continuedFromSessionId, "continued_from_session_id");
  if (sessionId !== undefined && parentSessionId === sessionId)
    throw new ValidationError("parent_session_id", "must differ from session_id");
  return {
    sessionId,
    owner,
    workspace: request.workspace,
    timezone,
    kind,
    parentSessionId,
    continuedFromSessionId,
    locale: validateLocale(request.locale),
    personalTerms: validatePersonalTerms(request.personalTerms),
  };
}

function validateContentPart(part: ContentPart, path: string): ContentPart {
  rejectUnknownFields(part, path);
  const value = part.part;
  if (value === undefined) throw new ValidationError(path, "content part has no text, image, tool_call or tool_result");
  switch (value.$case) {
    case "text": {
      const field = `${path}.text`;
      rejectUnknownFields(value.value, field);
      if (value.value.text.length === 0) throw new ValidationError(field, "must not be empty");
      requireText(value.value.text, field);
      return { part: { $case: "text", value: { text: value.value.text } } };
    }
    case "image": {
      const field = `${path}.image`;
      rejectUnknownFields(value.value, field);
      const { mediaType, url } = value.value;
      if (
        mediaType.length > 0 &&
        (mediaType.length > MAX_MEDIA_TYPE_CHARS || !/^image\/[A-Za-z0-9.+-]+$/.test(mediaType))
      ) {
        throw new ValidationError(`${field}.media_type`, "must be an image/* media type");
      }
      if (!isAllowedImageUrl(url))
        throw new ValidationError(`${field}.url`, "must be an https: URL or a data:image/… URL");
      return { part: { $case: "image", value: { mediaType, url } } };
    }
    case "toolCall": {
      const field = `${path}.tool_call`;
      rejectUnknownFields(value.value, field);
      const { callId, name, argumentsJson } = value.value;
      requireId(callId, `${field}.call_id`);
      if (name.length === 0) throw new ValidationError(`${field}.name`, "must not be empty");
      if (name.length > MAX_TOOL_NAME_CHARS || !/^[A-Za-z0-9_.:-]+$/.test(name)) {
        throw new ValidationError(
          `${field}.name`,
          `must be at most ${MAX_TOOL_NAME_CHARS} characters of letters, digits and _ . : -`,
        );
      }
      requireText(argumentsJson, `${field}.arguments_json`);
      // Before JSON.parse: prompt-assembly walks the parsed arguments recursively on every build.
      checkJsonLimits(argumentsJson, `${field}.arguments_json`);
      if (argumentsJson.length > 0 && !isJson(argumentsJson))
        throw new ValidationError(`${field}.arguments_json`, "is not valid JSON");
      return { part: { $case: "toolCall", value: { callId, name, argumentsJson } } };
    }
    case "toolResult": {
      const field = `${path}.tool_result`;
      rejectUnknownFields(value.value, field);
      const { callId, text, isError } = value.value;
      requireId(callId, `${field}.call_id`);
      requireText(text, `${field}.text`);
      return { part: { $case: "toolResult", value: { callId, text, isError } } };
    }
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const dataImageUrl = /^data:image\/[A-Za-z0-9.+-]+(?:;[A-Za-z0-9=.+-]+)*,/;

/** Images are sent to providers by reference: https only (no http, file: or internal schemes) or inline data. */
function isAllowedImageUrl(url: string): boolean {
  if (dataImageUrl.test(url)) return true;
  if (!url.startsWith("https://")) return false;
  try {
    return new URL(url).hostname.length > 0;
  } catch {
    return false;
  }
}

export function validateSaveMessage(request: SaveMessageRequest): SaveMessageCommand {
  rejectUnknownFields(request, REQUEST);
  const sessionId = requireId(request.sessionId, "session_id");
  const role = roleName(request.role);
  if (role === undefined)
    throw new ValidationError(
      "role",
      `must be ROLE_USER, ROLE_ASSISTANT, ROLE_TOOL or ROLE_SYSTEM (got ${request.role})`,
    );
  if (request.content.length === 0) throw new ValidationError("content", "must have at least one part");
  if (request.content.length > MAX_CONTENT_PARTS)
    throw new ValidationError("content", `must have at most ${MAX_CONTENT_PARTS} parts`);
  const content = request.content.map((part, i) => validateContentPart(part, `content[${i}]`));
  requireText(request.thinkingText, "thinking_text");
  const expectedSeq = optionalSeq(request.expectedSeq, "expected_seq");
  const serializedBytes = serializedMessageBytes({ role, content, thinkingText: request.thinkingText });
  if (serializedBytes > MAX_MESSAGE_BYTES) {
    throw new ValidationError(
      "content",
      `message is ${serializedBytes} bytes serialized (with thinking_text); at most ${MAX_MESSAGE_BYTES}`,
    );
  }
  return {
    sessionId,
    role,
    content,
    thinkingText: request.thinkingText,
    expectedSeq,
    contentChars: contentCharCount(content),
    thinkingChars: codePointLength(request.thinkingText),
    serializedBytes,
  };
}

export function validateDeleteMessage(request: DeleteMessageRequest): DeleteMessageCommand {
  rejectUnknownFields(request, REQUEST);
  return {
    sessionId: requireId(request.sessionId, "session_id"),
    messageId: requireId(request.messageId, "message_id"),
    expectedSeq: optionalSeq(request.expectedSeq, "expected_seq"),
  };
}

export function validateCommitCompaction(request: CommitCompactionRequest): CommitCompactionCommand {
  rejectUnknownFields(request, REQUEST);
  const sessionId = requireId(request.sessionId, "session_id");
  if (!Number.isInteger(request.expectedGeneration) || request.expectedGeneration < 0) {
    throw new ValidationError("expected_generation", "must be a non-negative integer");
  }
  const boundaryMessageId = requireId(request.boundaryMessageId, "boundary_message_id");
  if (request.summary.trim().length === 0) throw new ValidationError("summary", "must not be empty");
  requireText(request.summary, "summary");
  if (codePointLength(request.summary) > MAX_SUMMARY_INPUT_CHARS) {
    throw new ValidationError("summary", `must be at most ${MAX_SUMMARY_INPUT_CHARS} characters before scrubbing`);
  }
  return {
    sessionId,
    expectedGeneration: request.expectedGeneration,
    boundaryMessageId,
    summary: request.summary,
    personalTerms: validatePersonalTerms(request.personalTerms),
  };
}

export function validateDeleteSession(request: DeleteSessionRequest): SessionIdCommand {
  rejectUnknownFields(request, REQUEST);
  return { sessionId: requireId(request.sessionId, "session_id") };
}

export function validatePromoteSideTask(request: PromoteSideTaskRequest): SessionIdCommand {
  rejectUnknownFields(request, REQUEST);
  return { sessionId: requireId(request.sessionId, "session_id") };
}

export function validateGetSession(request: GetSessionRequest): SessionIdCommand {
  rejectUnknownFields(request, REQUEST);
  return { sessionId: requireId(request.sessionId, "session_id") };
}

export function validateReadEvents(request: ReadEventsRequest): ReadEventsCommand {
  rejectUnknownFields(request, REQUEST);
  const sessionId = requireId(request.sessionId, "session_id");
  if (!Number.isSafeInteger(request.afterSeq) || request.afterSeq < 0)
    throw new ValidationError("after_seq", "must be a non-negative integer");
  const limit = request.limit === 0 ? READ_EVENTS_DEFAULT_LIMIT : request.limit;
  if (!Number.isInteger(limit) || limit < 1 || limit > READ_EVENTS_MAX_LIMIT) {
    throw new ValidationError(
      "limit",
      `must be between 1 and ${READ_EVENTS_MAX_LIMIT} (0 means ${READ_EVENTS_DEFAULT_LIMIT})`,
    );
  }
  return { sessionId, afterSeq: request.afterSeq, limit };
}

export function validateListMessages(request: ListMessagesRequest): ListMessagesCommand {
  rejectUnknownFields(request, REQUEST);
  return { sessionId: requireId(request.sessionId, "session_id"), includeDeleted: request.includeDeleted };
}

export function validateGetDataKeys(request: GetDataKeysRequest): GetDataKeysCommand {
  rejectUnknownFields(request, REQUEST);
  const ids = request.sessionIds;
  if (ids.length === 0 || ids.length > DATA_KEYS_MAX_IDS) {
    throw new ValidationError("session_ids", `must hold 1 to ${DATA_KEYS_MAX_IDS} session ids, got ${ids.length}`);
  }
  return { sessionIds: ids.map((id, index) => requireId(id, `session_ids[${index}]`)) };
}
