// @prefix-guard/client: the harness client, and everything a caller needs to type its calls and read
// the answers (message types, enums, error classes) so that one install is enough.

// Errors every call may throw (a failed call is the typed error the server threw).
export type { ErrorCode, ErrorContext } from "@prefix-guard/errors";
export {
  AlreadyExistsError,
  ConflictError,
  DeadlineExceededError,
  FailedPreconditionError,
  InternalError,
  isPrefixGuardError,
  NotFoundError,
  PermissionDeniedError,
  PrefixGuardError,
  ResourceExhaustedError,
  UnauthenticatedError,
  UnavailableError,
  ValidationError,
} from "@prefix-guard/errors";
// Subscribing: the topic names and the CloudEvents attributes (ce_* headers) every record carries.
export type { CloudEventAttributes, TopicName } from "@prefix-guard/events";
export { CloudEventHeader, cloudEventAttributes, cloudEventType, Topics } from "@prefix-guard/events";
// Messages: each name is the type and its codec (`BuildRequestResponse.toJSON(response)` is the proto3
// JSON form, enums as names). Enums are numeric TypeScript enums; `enumName` names one value.
export {
  BuildCompactionRequestRequest,
  BuildCompactionRequestResponse,
  BuildRequestRequest,
  BuildRequestResponse,
  HistoryWindowStats,
  PrefixChangeReport,
  SectionFingerprint,
  SystemSection,
  ToolDefinition,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
export {
  ContentPart,
  ImagePart,
  Role,
  SessionKind,
  TextPart,
  ToolCallPart,
  ToolResultPart,
} from "@prefix-guard/proto/common/v1/common";
// Event envelopes of the four subscriber topics (session.events.v1, prompt.prefix.v1, llm.usage.v1,
// cache.collapse.v1) and their payloads: `SessionEvent.decode(record.value)` reads a record.
export { CacheCollapsed, CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
export { FingerprintObserved, PrefixChanged, PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
export {
  CompactionCommitted,
  MessageDeleted,
  MessageSaved,
  SealedContent,
  SealedFields,
  SessionCreated,
  SessionEvent,
} from "@prefix-guard/proto/events/v1/session_events";
export { LlmUsageEvent, ProviderCacheReport, UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
export { RawProviderUsage, RecordUsageResponse } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
export { ContentSource, Decision, FileSource } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
export {
  CommitCompactionResponse,
  CreateSessionResponse,
  DataKey,
  GetDataKeysResponse,
  ListMessagesResponse,
  ReadEventsResponse,
  SaveMessageResponse,
  Session,
  StoredMessage,
  WriteResponse,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
export type {
  BuildOptions,
  CallOverrides,
  CommitCompactionInput,
  CreateSessionInput,
  DeleteMessageInput,
  HarnessClient,
  HarnessClientOptions,
  MessageContent,
  RawUsageInput,
  SaveMessageInput,
  TlsOptions,
  TurnResult,
  UsageInput,
  UsageRecordIdentity,
} from "./harness-client";
export { createHarnessClient } from "./harness-client";
export { translateClientError } from "./peer-errors";
export type { Plain } from "./plain";
export { enumName, plain } from "./plain";
// Sealed session content (schema 2): the keys of a `subscriber` principal, and opening an event with one.
export type { DataKeyClient, DataKeyClientOptions, SessionDataKey } from "./sealed-events";
export { createDataKeyClient, isSealedEvent, MAX_DATA_KEYS_PER_CALL, openSealedEvent } from "./sealed-events";
