// The bad-input table (issue 7): every RPC of session-events, rules-snapshot and prompt-assembly,
// fed empty, oversized, wrong-type and hostile values. Each case is a VALID baseline request for
// a live fixture with exactly one thing broken, so a rejection can only be caused by that one
// thing, and an acceptance would really write (and show up in the DB checksums).
//
// Requests are raw protobuf bytes: typed values go through ts-proto's encoder, everything the
// encoder cannot produce (invalid UTF-8, wrong wire types, unknown field numbers, int64 beyond
// 2^53, truncated frames) is appended by hand. Protobuf is last-wins for a scalar field, so an
// appended field overrides the baseline's value of the same number.

import {
  type BuildRequestRequest,
  BuildRequestRequest as BuildRequestRequestFns,
  type RebuildProjectionRequest,
  RebuildProjectionRequest as RebuildProjectionRequestFns,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { type ContentPart, Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import { type UsageRecorded, UsageRecorded as UsageRecordedFns } from "@prefix-guard/proto/events/v1/usage_events";
import {
  type RawProviderUsage,
  type RecordUsageRequest,
  RecordUsageRequest as RecordUsageRequestFns,
  type TraceSessionRequest,
  TraceSessionRequest as TraceSessionRequestFns,
} from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import {
  type GetRequest,
  GetRequest as GetRequestFns,
  type InvalidateRequest,
  InvalidateRequest as InvalidateRequestFns,
  type ResolveRequest,
  ResolveRequest as ResolveRequestFns,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import {
  type CommitCompactionRequest,
  CommitCompactionRequest as CommitCompactionRequestFns,
  type CreateSessionRequest,
  CreateSessionRequest as CreateSessionRequestFns,
  type DeleteMessageRequest,
  DeleteMessageRequest as DeleteMessageRequestFns,
  type DeleteSessionRequest,
  DeleteSessionRequest as DeleteSessionRequestFns,
  type GetSessionRequest,
  GetSessionRequest as GetSessionRequestFns,
  type ListMessagesRequest,
  ListMessagesRequest as ListMessagesRequestFns,
  type PromoteSideTaskRequest,
  PromoteSideTaskRequest as PromoteSideTaskRequestFns,
  type ReadEventsRequest,
  ReadEventsRequest as ReadEventsRequestFns,
  type SaveMessageRequest,
  SaveMessageRequest as SaveMessageRequestFns,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";

// ---------------------------------------------------------------------------------------------
// Protobuf wire format by hand.

const VARINT = 0;
const LEN = 2;

/** Base-128 varint; negative numbers as their 64-bit two's complement (10 bytes), as protobuf does. */
export function varint(value: bigint | number): Uint8Array {
  let rest = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    const low = Number(rest & 0x7fn);
    rest >>= 7n;
    out.push(rest > 0n ? low | 0x80 : low);
  } while (rest > 0n);
  return Uint8Array.from(out);
}

export function concatBytes(...parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const key = (field: number, wireType: number) => varint((field << 3) | wireType);
export const varintField = (field: number, value: bigint | number) => concatBytes(key(field, VARINT), varint(value));
export const lenField = (field: number, payload: Uint8Array) =>
  concatBytes(key(field, LEN), varint(payload.length), payload);
export const stringField = (field: number, text: string) => lenField(field, new TextEncoder().encode(text));

/** Bytes that are not UTF-8: a lone continuation/invalid lead byte pair after an ASCII prefix. */
export const INVALID_UTF8 = Uint8Array.from([0x6f, 0x6b, 0xff, 0xfe]);
/** A UTF-16 surrogate (U+D800) encoded CESU-style: what a lone surrogate looks like on the wire. */
export const SURROGATE_UTF8 = Uint8Array.from([0x6f, 0x6b, 0xed, 0xa0, 0x80]);
/** An overlong encoding of "/" (C0 AF), the classic path-traversal bypass. */
export const OVERLONG_UTF8 = Uint8Array.from([0x2f, 0xc0, 0xaf]);

// ---------------------------------------------------------------------------------------------
// Fixtures and the case shape.

/** What a fixture created through the real RPCs gives the baselines (see bad-input.e2e.test.ts). */
export interface Fixture {
  /** A main session with two messages, its rules pinned and one request already built. */
  readonly sessionId: string;
  /** A side task of `sessionId`, not yet promoted. */
  readonly sideSessionId: string;
  readonly firstMessageId: string;
  readonly secondMessageId: string;
  readonly lastSeq: number;
  /** An id no session has yet (CreateSession's baseline); the suite makes it unique per input. */
  readonly newSessionId: string;
  readonly owner: string;
  readonly workspace: string;
  /** The rules text pinned for `sessionId` (content source). */
  readonly rulesText: string;
}

export type ServiceName = "sessionEvents" | "rulesSnapshot" | "promptAssembly" | "cacheMonitor";

export type Batch =
  | "empty"
  | "oversized"
  | "wrong-type"
  | "unknown-field"
  | "unknown-enum"
  | "negative-or-overflow"
  | "invalid-utf8"
  | "sql-metacharacters"
  | "bad-value"
  | "malformed-frame";

export type Expected =
  /** INVALID_ARGUMENT naming one of `fields` (pg-field trailer or "field: ..." details); null = any field. */
  | { readonly code: "INVALID_ARGUMENT"; readonly fields: readonly string[] | null; readonly details?: RegExp }
  /** RESOURCE_EXHAUSTED (the transport's size cap), or INVALID_ARGUMENT naming `field` (a validation cap). */
  | { readonly code: "TOO_LARGE"; readonly field: string };

export interface BadInputCase {
  readonly batch: Batch;
  readonly service: ServiceName;
  /** The proto method name, e.g. "SaveMessage". */
  readonly method: string;
  /** What is wrong with the request, precise enough to reproduce it. */
  readonly input: string;
  readonly request: (fixture: Fixture) => Uint8Array;
  readonly expected: Expected;
}

const invalid = (...fields: string[]): Expected => ({ code: "INVALID_ARGUMENT", fields });
/** Decode-level problems may be reported on the whole request by a generic fix; either name is clear. */
const invalidOrRequest = (field: string): Expected => ({ code: "INVALID_ARGUMENT", fields: [field, "request"] });
const anyInvalid = (details?: RegExp): Expected =>
  details === undefined
    ? { code: "INVALID_ARGUMENT", fields: null }
    : { code: "INVALID_ARGUMENT", fields: null, details };
const unknownField = (fieldNumber: number, path = "request"): Expected => ({
  code: "INVALID_ARGUMENT",
  fields: path === "request" ? ["request"] : [path, "request"],
  details: new RegExp(`field number ${fieldNumber}\\b`),
});
/** A known field with the wrong wire type: rejected as an unknown field of the request, or as the field itself. */
// A decoder cannot name a field it could not decode: the containing message's path is a clear answer too.
const wrongType = (field: string): Expected => ({
  code: "INVALID_ARGUMENT",
  fields: field.includes(".") ? [field, field.slice(0, field.lastIndexOf(".")), "request"] : [field, "request"],
});
const tooLarge = (field: string): Expected => ({ code: "TOO_LARGE", field });

// ---------------------------------------------------------------------------------------------
// Hostile values.

export const TEN_MB = 10 * 1024 * 1024;
const tenMegabytes = () => "x".repeat(TEN_MB);

/** SQL metacharacters and friends; none of them is a valid id, a zone, a locale or a path. */
export const SQL_METACHARACTERS: ReadonlyArray<readonly [label: string, value: string]> = [
  ["quote + DROP TABLE", "'; DROP TABLE session_event; --"],
  ["double quote OR 1=1", '" OR 1=1 --'],
  ["backslash escapes", "a\\'b\\\\c\\"],
  ["NUL byte", "abc\u0000def"],
  ["UNION SELECT in backticks", "x` UNION SELECT * FROM session --"],
];

/** Id values every service must refuse: empty-ish, oversized for the 128-char column, or unsafe. */
const BAD_IDS: ReadonlyArray<readonly [label: string, value: string, batch: Batch]> = [
  ["whitespace only", "   ", "empty"],
  ["129 characters", "a".repeat(129), "oversized"],
  ...SQL_METACHARACTERS.map(([label, value]) => [label, value, "sql-metacharacters"] as const),
];

// ---------------------------------------------------------------------------------------------
// Baselines: one valid request per RPC against a fixture.

interface Encoder<T> {
  encode(message: T): { finish(): Uint8Array };
}

interface RpcSpec<T extends { sessionId: string }> {
  readonly service: ServiceName;
  readonly method: string;
  readonly fns: Encoder<T>;
  readonly baseline: (f: Fixture) => T;
}

const text = (value: string): ContentPart => ({ part: { $case: "text", value: { text: value } } });
const image = (mediaType: string, url: string): ContentPart => ({
  part: { $case: "image", value: { mediaType, url } },
});
const toolCall = (callId: string, name: string, argumentsJson: string): ContentPart => ({
  part: { $case: "toolCall", value: { callId, name, argumentsJson } },
});
const toolResult = (callId: string, result: string): ContentPart => ({
  part: { $case: "toolResult", value: { callId, text: result, isError: false } },
});
const fileSource = (path: string): ResolveRequest["source"] => ({ $case: "file", value: { path } });
const contentSource = (value: string): ResolveRequest["source"] => ({ $case: "content", value: { text: value } });
const rulesFile = (path: string): BuildRequestRequest["rulesSource"] => ({ $case: "rulesFile", value: { path } });
const rulesContent = (value: string): BuildRequestRequest["rulesSource"] => ({
  $case: "rulesContent",
  value: { text: value },
});

const createSession: RpcSpec<CreateSessionRequest> = {
  service: "sessionEvents",
  method: "CreateSession",
  fns: CreateSessionRequestFns,
  baseline: (f) => ({
    sessionId: f.newSessionId,
    owner: f.owner,
    workspace: f.workspace,
    timezone: "Asia/Shanghai",
    kind: SessionKind.SESSION_KIND_MAIN,
    parentSessionId: "",
    continuedFromSessionId: "",
    personalTerms: [],
    locale: "",
  }),
};
const saveMessage: RpcSpec<SaveMessageRequest> = {
  service: "sessionEvents",
  method: "SaveMessage",
  fns: SaveMessageRequestFns,
  baseline: (f) => ({ sessionId: f.sessionId, role: Role.ROLE_USER, content: [text("继续")], thinkingText: "" }),
};
const deleteMessage: RpcSpec<DeleteMessageRequest> = {
  service: "sessionEvents",
  method: "DeleteMessage",
  fns: DeleteMessageRequestFns,
  baseline: (f) => ({ sessionId: f.sessionId, messageId: f.secondMessageId }),
};
const commitCompaction: RpcSpec<CommitCompactionRequest> = {
  service: "sessionEvents",
  method: "CommitCompaction",
  fns: CommitCompactionRequestFns,
  baseline: (f) => ({
    sessionId: f.sessionId,
    expectedGeneration: 0,
    boundaryMessageId: f.firstMessageId,
    summary: "用户在做压测重试",
    personalTerms: [],
  }),
};
const deleteSession: RpcSpec<DeleteSessionRequest> = {
  service: "sessionEvents",
  method: "DeleteSession",
  fns: DeleteSessionRequestFns,
  baseline: (f) => ({ sessionId: f.sessionId }),
};
const promoteSideTask: RpcSpec<PromoteSideTaskRequest> = {
  service: "sessionEvents",
  method: "PromoteSideTask",
  fns: PromoteSideTaskRequestFns,
  baseline: (f) => ({ sessionId: f.sideSessionId }),
};
const readEvents: RpcSpec<ReadEventsRequest> = {
  service: "sessionEvents",
  method: "ReadEvents",
  fns: ReadEventsRequestFns,
  baseline: (f) => ({ sessionId: f.sessionId, afterSeq: 0, limit: 10 }),
};
const getSession: RpcSpec<GetSessionRequest> = {
  service: "sessionEvents",
  method: "GetSession",
  fns: GetSessionRequestFns,
  baseline: (f) => ({ sessionId: f.sessionId }),
};
const listMessages: RpcSpec<ListMessagesRequest> = {
  service: "sessionEvents",
  method: "ListMessages",
  fns: ListMessagesRequestFns,
  baseline: (f) => ({ sessionId: f.sessionId, includeDeleted: false }),
};
const resolve: RpcSpec<ResolveRequest> = {
  service: "rulesSnapshot",
  method: "Resolve",
  fns: ResolveRequestFns,
  baseline: (f) => ({
    sessionId: f.sessionId,
    workspace: f.workspace,
    source: contentSource(f.rulesText),
    compactionGeneration: 0,
    embed: false,
    locale: "",
  }),
};
const invalidate: RpcSpec<InvalidateRequest> = {
  service: "rulesSnapshot",
  method: "Invalidate",
  fns: InvalidateRequestFns,
  baseline: (f) => ({ sessionId: f.sessionId, reason: "bad-input baseline" }),
};
const getSnapshot: RpcSpec<GetRequest> = {
  service: "rulesSnapshot",
  method: "Get",
  fns: GetRequestFns,
  baseline: (f) => ({ sessionId: f.sessionId }),
};
const buildRequest: RpcSpec<BuildRequestRequest> = {
  service: "promptAssembly",
  method: "BuildRequest",
  fns: BuildRequestRequestFns,
  baseline: (f) => ({
    sessionId: f.sessionId,
    minSeq: f.lastSeq,
    sections: ["persona", "experiences", "memories", "environment"].map((k) => ({ key: k, text: `${k} text` })),
    tools: [{ name: "shell", description: "run a command", inputSchemaJson: '{"type":"object"}' }],
    wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
    model: "claude-test",
    workspace: f.workspace,
    rulesSource: rulesContent(f.rulesText),
    embed: false,
    locale: "zh-CN",
  }),
};
const rebuildProjection: RpcSpec<RebuildProjectionRequest> = {
  service: "promptAssembly",
  method: "RebuildProjection",
  fns: RebuildProjectionRequestFns,
  baseline: (f) => ({ sessionId: f.sessionId }),
};

/** One LLM call's usage, as a harness reports it after sending the body BuildRequest returned. */
const usage = (patch: Partial<UsageRecorded> = {}): UsageRecorded => ({
  requestId: "req-bad-input-1",
  model: "claude-test",
  promptTokens: 12_000,
  cachedTokens: 11_000,
  completionTokens: 200,
  cacheCreationTokens: 0,
  provider: "anthropic",
  calledAtMs: 1_791_777_600_000,
  ...patch,
});
const recordUsage: RpcSpec<RecordUsageRequest> = {
  service: "cacheMonitor",
  method: "RecordUsage",
  fns: RecordUsageRequestFns,
  baseline: (f) => ({ sessionId: f.sessionId, usage: usage() }),
};
const traceSession: RpcSpec<TraceSessionRequest> = {
  service: "cacheMonitor",
  method: "TraceSession",
  fns: TraceSessionRequestFns,
  baseline: (f) => ({ sessionId: f.sessionId, limit: 10 }),
};

interface ErasedSpec {
  readonly service: ServiceName;
  readonly method: string;
  readonly baselineBytes: (f: Fixture) => Uint8Array;
  readonly withSessionId: (f: Fixture, sessionId: string) => Uint8Array;
}

function erase<T extends { sessionId: string }>(spec: RpcSpec<T>): ErasedSpec {
  return {
    service: spec.service,
    method: spec.method,
    baselineBytes: (f) => spec.fns.encode(spec.baseline(f)).finish(),
    withSessionId: (f, sessionId) => spec.fns.encode({ ...spec.baseline(f), sessionId }).finish(),
  };
}

const SESSION_RPCS: readonly ErasedSpec[] = [
  erase(createSession),
  erase(saveMessage),
  erase(deleteMessage),
  erase(commitCompaction),
  erase(deleteSession),
  erase(promoteSideTask),
  erase(readEvents),
  erase(getSession),
  erase(listMessages),
  erase(resolve),
  erase(invalidate),
  erase(getSnapshot),
  erase(buildRequest),
  erase(rebuildProjection),
];
const CACHE_MONITOR_RPCS: readonly ErasedSpec[] = [erase(recordUsage), erase(traceSession)];

/**
 * Every RPC that takes a required session_id as field 1, in the order the suite exercises them.
 * CacheMonitor.ListCollapses is not here: its session_id is an optional filter ("" = all sessions).
 */
export const ALL_RPCS: readonly ErasedSpec[] = [...SESSION_RPCS, ...CACHE_MONITOR_RPCS];

/** The valid request of each RPC, used once per RPC on a control fixture to prove the baselines pass. */
export function baselineRequest(method: string, f: Fixture): Uint8Array {
  const spec = ALL_RPCS.find((s) => s.method === method);
  if (spec === undefined) throw new Error(`no baseline for ${method}`);
  return spec.baselineBytes(f);
}

// ---------------------------------------------------------------------------------------------
// Case builders.

function typed<T extends { sessionId: string }>(
  spec: RpcSpec<T>,
  batch: Batch,
  input: string,
  patch: (base: T, f: Fixture) => NoInfer<T>,
  expected: Expected,
): BadInputCase {
  return {
    batch,
    service: spec.service,
    method: spec.method,
    input,
    request: (f) => spec.fns.encode(patch(spec.baseline(f), f)).finish(),
    expected,
  };
}

/** The baseline (optionally patched first) followed by hand-made bytes. */
function appended<T extends { sessionId: string }>(
  spec: RpcSpec<T>,
  batch: Batch,
  input: string,
  raw: Uint8Array,
  expected: Expected,
  patch: (base: T) => NoInfer<T> = (base) => base,
): BadInputCase {
  return {
    batch,
    service: spec.service,
    method: spec.method,
    input,
    request: (f) => concatBytes(spec.fns.encode(patch(spec.baseline(f))).finish(), raw),
    expected,
  };
}

/** ContentPart { text: TextPart { text: <bytes> } } as field 3 of SaveMessageRequest. */
const rawTextPart = (bytes: Uint8Array) => lenField(3, lenField(1, lenField(1, bytes)));

function perRpcCases(rpcs: readonly ErasedSpec[]): BadInputCase[] {
  const cases: BadInputCase[] = [];
  for (const rpc of rpcs) {
    const base = { service: rpc.service, method: rpc.method };
    cases.push({
      ...base,
      batch: "empty",
      input: "empty request (0 bytes)",
      request: () => new Uint8Array(0),
      // CreateSession generates an id when none is given, so its first required field is the owner.
      expected: invalid(rpc.method === "CreateSession" ? "owner" : "session_id"),
    });
    for (const [label, value, batch] of BAD_IDS) {
      cases.push({
        ...base,
        batch,
        input: `session_id ${label}: ${JSON.stringify(value)}`,
        request: (f) => rpc.withSessionId(f, value),
        expected: invalid("session_id"),
      });
    }
    cases.push({
      ...base,
      batch: "oversized",
      input: "session_id of 10 MB",
      request: (f) => rpc.withSessionId(f, tenMegabytes()),
      expected: tooLarge("session_id"),
    });
    cases.push({
      ...base,
      batch: "invalid-utf8",
      input: "session_id bytes 6f 6b ff fe (invalid UTF-8)",
      request: (f) => concatBytes(rpc.baselineBytes(f), lenField(1, INVALID_UTF8)),
      expected: invalidOrRequest("session_id"),
    });
    cases.push({
      ...base,
      batch: "invalid-utf8",
      input: "session_id bytes 6f 6b ed a0 80 (UTF-8-encoded lone surrogate U+D800)",
      request: (f) => concatBytes(rpc.baselineBytes(f), lenField(1, SURROGATE_UTF8)),
      expected: invalidOrRequest("session_id"),
    });
    cases.push({
      ...base,
      batch: "wrong-type",
      input: "session_id (field 1) sent as varint 7 instead of a string",
      request: (f) => concatBytes(rpc.baselineBytes(f), varintField(1, 7)),
      expected: wrongType("session_id"),
    });
    cases.push({
      ...base,
      batch: "unknown-field",
      input: "unknown field 99 (varint 1) after a valid request",
      request: (f) => concatBytes(rpc.baselineBytes(f), varintField(99, 1)),
      expected: unknownField(99),
    });
    cases.push({
      ...base,
      batch: "unknown-field",
      input: 'unknown field 99 (string "x") after a valid request',
      request: (f) => concatBytes(rpc.baselineBytes(f), stringField(99, "x")),
      expected: unknownField(99),
    });
    cases.push({
      ...base,
      batch: "malformed-frame",
      input: "truncated: a length-delimited field 2 claiming 50 bytes with 2 present",
      request: (f) => concatBytes(rpc.baselineBytes(f), Uint8Array.from([0x12, 50, 0x61, 0x62])),
      expected: anyInvalid(),
    });
    cases.push({
      ...base,
      batch: "malformed-frame",
      input: "unterminated varint (bytes 08 ff ff ff)",
      request: (f) => concatBytes(rpc.baselineBytes(f), Uint8Array.from([0x08, 0xff, 0xff, 0xff])),
      expected: anyInvalid(),
    });
  }
  return cases;
}

const MAX_SAFE_PLUS_ONE = 2n ** 53n;
const INT64_MAX = 2n ** 63n - 1n;

function sessionEventsCases(): BadInputCase[] {
  const sql = SQL_METACHARACTERS;
  return [
    // CreateSession
    typed(createSession, "empty", "owner empty", (b) => ({ ...b, owner: "" }), invalid("owner")),
    ...sql.map(([label, v]) =>
      typed(
        createSession,
        "sql-metacharacters",
        `owner ${label}: ${JSON.stringify(v)}`,
        (b) => ({ ...b, owner: v }),
        invalid("owner"),
      ),
    ),
    ...sql.map(([label, v]) =>
      typed(
        createSession,
        "sql-metacharacters",
        `timezone ${label}: ${JSON.stringify(v)}`,
        (b) => ({ ...b, timezone: v }),
        invalid("timezone"),
      ),
    ),
    ...sql.map(([label, v]) =>
      typed(
        createSession,
        "sql-metacharacters",
        `parent_session_id ${label}: ${JSON.stringify(v)}`,
        (b) => ({ ...b, parentSessionId: v }),
        invalid("parent_session_id"),
      ),
    ),
    ...sql.map(([label, v]) =>
      typed(
        createSession,
        "sql-metacharacters",
        `continued_from_session_id ${label}: ${JSON.stringify(v)}`,
        (b) => ({ ...b, continuedFromSessionId: v }),
        invalid("continued_from_session_id"),
      ),
    ),
    typed(
      createSession,
      "bad-value",
      'timezone "Mars/Olympus_Mons"',
      (b) => ({ ...b, timezone: "Mars/Olympus_Mons" }),
      invalid("timezone"),
    ),
    typed(
      createSession,
      "oversized",
      "owner of 129 characters",
      (b) => ({ ...b, owner: "o".repeat(129) }),
      invalid("owner"),
    ),
    typed(
      createSession,
      "oversized",
      "workspace of 1025 characters",
      (b) => ({ ...b, workspace: `/${"w".repeat(1024)}` }),
      invalid("workspace"),
    ),
    typed(
      createSession,
      "oversized",
      "workspace of 10 MB",
      (b) => ({ ...b, workspace: tenMegabytes() }),
      tooLarge("workspace"),
    ),
    appended(
      createSession,
      "invalid-utf8",
      "owner bytes 6f 6b ff fe",
      lenField(2, INVALID_UTF8),
      invalidOrRequest("owner"),
    ),
    appended(
      createSession,
      "invalid-utf8",
      "workspace bytes 6f 6b ff fe (free text, but not text)",
      lenField(3, INVALID_UTF8),
      invalidOrRequest("workspace"),
    ),
    appended(
      createSession,
      "invalid-utf8",
      "workspace bytes 2f c0 af (overlong '/')",
      lenField(3, OVERLONG_UTF8),
      invalidOrRequest("workspace"),
    ),
    appended(
      createSession,
      "invalid-utf8",
      "timezone bytes 6f 6b ff fe",
      lenField(4, INVALID_UTF8),
      invalidOrRequest("timezone"),
    ),
    typed(createSession, "unknown-enum", "kind = 99", (b) => ({ ...b, kind: 99 as SessionKind }), invalid("kind")),
    appended(createSession, "unknown-enum", "kind = -1 (10-byte varint)", varintField(5, -1), invalid("kind")),
    appended(
      createSession,
      "wrong-type",
      "kind (field 5) sent length-delimited",
      stringField(5, "MAIN"),
      wrongType("kind"),
    ),
    appended(createSession, "wrong-type", "owner (field 2) sent as varint", varintField(2, 1), wrongType("owner")),
    typed(
      createSession,
      "bad-value",
      "kind SIDE without parent_session_id",
      (b) => ({ ...b, kind: SessionKind.SESSION_KIND_SIDE }),
      invalid("parent_session_id"),
    ),
    typed(
      createSession,
      "bad-value",
      "parent_session_id equal to session_id",
      (b) => ({ ...b, kind: SessionKind.SESSION_KIND_SIDE, parentSessionId: b.sessionId }),
      invalid("parent_session_id"),
    ),

    // SaveMessage
    typed(saveMessage, "empty", "content empty (no parts)", (b) => ({ ...b, content: [] }), invalid("content")),
    typed(
      saveMessage,
      "empty",
      "content[0].text empty",
      (b) => ({ ...b, content: [text("")] }),
      invalid("content[0].text"),
    ),
    appended(
      saveMessage,
      "empty",
      "content[0] with no part set (empty ContentPart)",
      lenField(3, new Uint8Array(0)),
      invalid("content[0]"),
      (b) => ({
        ...b,
        content: [],
      }),
    ),
    typed(saveMessage, "unknown-enum", "role = 99", (b) => ({ ...b, role: 99 as Role }), invalid("role")),
    typed(
      saveMessage,
      "unknown-enum",
      "role = ROLE_UNSPECIFIED (0)",
      (b) => ({ ...b, role: Role.ROLE_UNSPECIFIED }),
      invalid("role"),
    ),
    appended(saveMessage, "unknown-enum", "role = -1 (10-byte varint)", varintField(2, -1), invalid("role")),
    appended(
      saveMessage,
      "wrong-type",
      "role (field 2) sent length-delimited",
      stringField(2, "ROLE_USER"),
      wrongType("role"),
    ),
    appended(saveMessage, "wrong-type", "content (field 3) sent as varint", varintField(3, 1), wrongType("content")),
    typed(
      saveMessage,
      "negative-or-overflow",
      "expected_seq = -1",
      (b) => ({ ...b, expectedSeq: -1 }),
      invalid("expected_seq"),
    ),
    appended(
      saveMessage,
      "negative-or-overflow",
      "expected_seq = 2^53 (beyond a safe JS integer)",
      varintField(5, MAX_SAFE_PLUS_ONE),
      invalidOrRequest("expected_seq"),
    ),
    appended(
      saveMessage,
      "negative-or-overflow",
      "expected_seq = 2^63-1",
      varintField(5, INT64_MAX),
      invalidOrRequest("expected_seq"),
    ),
    typed(
      saveMessage,
      "oversized",
      "101 content parts",
      (b) => ({ ...b, content: Array.from({ length: 101 }, (_, i) => text(`p${i}`)) }),
      invalid("content"),
    ),
    typed(
      saveMessage,
      "oversized",
      "content[0].text of 1.5 MB (over the 1 MB message cap)",
      (b) => ({ ...b, content: [text("y".repeat(1_500_000))] }),
      tooLarge("content"),
    ),
    typed(
      saveMessage,
      "oversized",
      "content[0].text of 10 MB",
      (b) => ({ ...b, content: [text(tenMegabytes())] }),
      tooLarge("content"),
    ),
    typed(
      saveMessage,
      "oversized",
      "thinking_text of 10 MB",
      (b) => ({ ...b, thinkingText: tenMegabytes() }),
      tooLarge("content"),
    ),
    appended(
      saveMessage,
      "invalid-utf8",
      "content[0].text bytes 6f 6b ff fe",
      rawTextPart(INVALID_UTF8),
      invalidOrRequest("content[0].text"),
      (b) => ({
        ...b,
        content: [],
      }),
    ),
    appended(
      saveMessage,
      "invalid-utf8",
      "content[0].text bytes 6f 6b ed a0 80 (lone surrogate U+D800 as UTF-8)",
      rawTextPart(SURROGATE_UTF8),
      invalidOrRequest("content[0].text"),
      (b) => ({ ...b, content: [] }),
    ),
    appended(
      saveMessage,
      "invalid-utf8",
      "thinking_text bytes 6f 6b ff fe",
      lenField(4, INVALID_UTF8),
      invalidOrRequest("thinking_text"),
    ),
    typed(
      saveMessage,
      "bad-value",
      'content[0].image.url "http://example.com/a.png" (not https)',
      (b) => ({
        ...b,
        content: [image("image/png", "http://example.com/a.png")],
      }),
      invalid("content[0].image.url"),
    ),
    typed(
      saveMessage,
      "bad-value",
      'content[0].image.url "javascript:alert(1)"',
      (b) => ({ ...b, content: [image("", "javascript:alert(1)")] }),
      invalid("content[0].image.url"),
    ),
    ...sql.map(([label, v]) =>
      typed(
        saveMessage,
        "sql-metacharacters",
        `content[0].image.media_type ${label}: ${JSON.stringify(v)}`,
        (b) => ({
          ...b,
          content: [image(v, "https://example.com/a.png")],
        }),
        invalid("content[0].image.media_type"),
      ),
    ),
    ...sql.map(([label, v]) =>
      typed(
        saveMessage,
        "sql-metacharacters",
        `content[0].tool_call.call_id ${label}: ${JSON.stringify(v)}`,
        (b) => ({
          ...b,
          role: Role.ROLE_ASSISTANT,
          content: [toolCall(v, "shell", "{}")],
        }),
        invalid("content[0].tool_call.call_id"),
      ),
    ),
    ...sql.map(([label, v]) =>
      typed(
        saveMessage,
        "sql-metacharacters",
        `content[0].tool_call.name ${label}: ${JSON.stringify(v)}`,
        (b) => ({
          ...b,
          role: Role.ROLE_ASSISTANT,
          content: [toolCall("c1", v, "{}")],
        }),
        invalid("content[0].tool_call.name"),
      ),
    ),
    typed(
      saveMessage,
      "bad-value",
      "content[0].tool_call.arguments_json \"{'a':1}\" (not JSON)",
      (b) => ({
        ...b,
        role: Role.ROLE_ASSISTANT,
        content: [toolCall("c1", "shell", "{'a':1}")],
      }),
      invalid("content[0].tool_call.arguments_json"),
    ),
    ...sql.map(([label, v]) =>
      typed(
        saveMessage,
        "sql-metacharacters",
        `content[0].tool_result.call_id ${label}: ${JSON.stringify(v)}`,
        (b) => ({
          ...b,
          role: Role.ROLE_TOOL,
          content: [toolResult(v, "ok")],
        }),
        invalid("content[0].tool_result.call_id"),
      ),
    ),

    // DeleteMessage
    typed(deleteMessage, "empty", "message_id empty", (b) => ({ ...b, messageId: "" }), invalid("message_id")),
    ...sql.map(([label, v]) =>
      typed(
        deleteMessage,
        "sql-metacharacters",
        `message_id ${label}: ${JSON.stringify(v)}`,
        (b) => ({ ...b, messageId: v }),
        invalid("message_id"),
      ),
    ),
    appended(
      deleteMessage,
      "invalid-utf8",
      "message_id bytes 6f 6b ff fe",
      lenField(2, INVALID_UTF8),
      invalidOrRequest("message_id"),
    ),
    typed(
      deleteMessage,
      "negative-or-overflow",
      "expected_seq = -1",
      (b) => ({ ...b, expectedSeq: -1 }),
      invalid("expected_seq"),
    ),
    appended(
      deleteMessage,
      "negative-or-overflow",
      "expected_seq = 2^63-1",
      varintField(3, INT64_MAX),
      invalidOrRequest("expected_seq"),
    ),
    appended(
      deleteMessage,
      "wrong-type",
      "message_id (field 2) sent as varint",
      varintField(2, 5),
      wrongType("message_id"),
    ),

    // CommitCompaction
    typed(commitCompaction, "empty", "summary empty", (b) => ({ ...b, summary: "" }), invalid("summary")),
    typed(
      commitCompaction,
      "empty",
      "summary whitespace only",
      (b) => ({ ...b, summary: " \n\t " }),
      invalid("summary"),
    ),
    typed(
      commitCompaction,
      "empty",
      "boundary_message_id empty",
      (b) => ({ ...b, boundaryMessageId: "" }),
      invalid("boundary_message_id"),
    ),
    ...sql.map(([label, v]) =>
      typed(
        commitCompaction,
        "sql-metacharacters",
        `boundary_message_id ${label}: ${JSON.stringify(v)}`,
        (b) => ({ ...b, boundaryMessageId: v }),
        invalid("boundary_message_id"),
      ),
    ),
    typed(
      commitCompaction,
      "oversized",
      "summary of 20001 characters",
      (b) => ({ ...b, summary: "总".repeat(20_001) }),
      tooLarge("summary"),
    ),
    typed(
      commitCompaction,
      "oversized",
      "summary of 10 MB",
      (b) => ({ ...b, summary: tenMegabytes() }),
      tooLarge("summary"),
    ),
    appended(
      commitCompaction,
      "invalid-utf8",
      "summary bytes 6f 6b ff fe",
      lenField(4, INVALID_UTF8),
      invalidOrRequest("summary"),
    ),
    appended(
      commitCompaction,
      "wrong-type",
      "expected_generation (field 2) sent length-delimited",
      stringField(2, "0"),
      wrongType("expected_generation"),
    ),

    // ReadEvents
    typed(readEvents, "negative-or-overflow", "after_seq = -1", (b) => ({ ...b, afterSeq: -1 }), invalid("after_seq")),
    appended(
      readEvents,
      "negative-or-overflow",
      "after_seq = 2^63-1",
      varintField(2, INT64_MAX),
      invalidOrRequest("after_seq"),
    ),
    appended(
      readEvents,
      "negative-or-overflow",
      "limit = -1 as varint (uint32 4294967295)",
      varintField(3, -1),
      invalid("limit"),
    ),
    typed(readEvents, "oversized", "limit = 1001", (b) => ({ ...b, limit: 1001 }), invalid("limit")),
    appended(
      readEvents,
      "wrong-type",
      "limit (field 3) sent length-delimited",
      stringField(3, "10"),
      wrongType("limit"),
    ),

    // ListMessages
    appended(
      listMessages,
      "wrong-type",
      "include_deleted (field 2) sent length-delimited",
      stringField(2, "true"),
      wrongType("include_deleted"),
    ),
  ];
}

function rulesSnapshotCases(): BadInputCase[] {
  const sql = SQL_METACHARACTERS;
  return [
    typed(resolve, "empty", "workspace empty (not embed)", (b) => ({ ...b, workspace: "" }), invalid("workspace")),
    // No source is not bad input: it means nothing was reported (seed 001 §3.4), answered from the snapshot.
    typed(
      resolve,
      "empty",
      "source.file.path empty",
      (b) => ({ ...b, source: fileSource("") }),
      invalid("source.file.path"),
    ),
    typed(
      resolve,
      "bad-value",
      'source.file.path relative "AGENTS.md"',
      (b) => ({ ...b, source: fileSource("AGENTS.md") }),
      invalid("source.file.path"),
    ),
    typed(
      resolve,
      "sql-metacharacters",
      'source.file.path with NUL "/tmp/AGENTS.md\\u0000.txt"',
      (b) => ({ ...b, source: fileSource("/tmp/AGENTS.md\u0000.txt") }),
      invalid("source.file.path"),
    ),
    typed(
      resolve,
      "oversized",
      "workspace of 513 characters",
      (b) => ({ ...b, workspace: `/${"w".repeat(512)}` }),
      invalid("workspace"),
    ),
    typed(
      resolve,
      "oversized",
      "source.file.path of 1025 characters",
      (b) => ({ ...b, source: fileSource(`/${"p".repeat(1024)}`) }),
      invalid("source.file.path"),
    ),
    typed(
      resolve,
      "oversized",
      "workspace of 10 MB",
      (b) => ({ ...b, workspace: tenMegabytes() }),
      tooLarge("workspace"),
    ),
    typed(
      resolve,
      "oversized",
      "source.content.text of 10 MB (one line)",
      (b) => ({ ...b, source: contentSource(tenMegabytes()) }),
      tooLarge("source.content.text"),
    ),
    appended(
      resolve,
      "invalid-utf8",
      "workspace bytes 6f 6b ff fe",
      lenField(2, INVALID_UTF8),
      invalidOrRequest("workspace"),
    ),
    appended(
      resolve,
      "invalid-utf8",
      "source.content.text bytes 6f 6b ff fe",
      lenField(4, lenField(1, INVALID_UTF8)),
      invalidOrRequest("source.content.text"),
    ),
    appended(
      resolve,
      "invalid-utf8",
      "source.file.path bytes 2f c0 af (overlong '/')",
      lenField(3, lenField(1, OVERLONG_UTF8)),
      invalidOrRequest("source.file.path"),
    ),
    appended(
      resolve,
      "negative-or-overflow",
      "compaction_generation = -1 as varint (uint32 4294967295; the column is a signed INT)",
      varintField(5, -1),
      invalid("compaction_generation"),
    ),
    typed(
      resolve,
      "negative-or-overflow",
      "compaction_generation = 2147483648 (one past the signed INT column)",
      (b) => ({ ...b, compactionGeneration: 2_147_483_648 }),
      invalid("compaction_generation"),
    ),
    appended(
      resolve,
      "wrong-type",
      "compaction_generation (field 5) sent length-delimited",
      stringField(5, "0"),
      wrongType("compaction_generation"),
    ),
    appended(
      resolve,
      "wrong-type",
      "embed (field 6) sent length-delimited",
      stringField(6, "true"),
      wrongType("embed"),
    ),
    appended(
      resolve,
      "wrong-type",
      "source.content (field 4) sent as varint",
      varintField(4, 1),
      wrongType("source.content"),
    ),
    ...sql.map(([label, v]) =>
      typed(
        resolve,
        "sql-metacharacters",
        `source.file.path relative ${label}: ${JSON.stringify(v)}`,
        (b) => ({ ...b, source: fileSource(v) }),
        invalid("source.file.path"),
      ),
    ),
    typed(invalidate, "oversized", "reason of 10 MB", (b) => ({ ...b, reason: tenMegabytes() }), tooLarge("reason")),
    typed(
      invalidate,
      "oversized",
      "reason of 100 KB",
      (b) => ({ ...b, reason: "r".repeat(100_000) }),
      tooLarge("reason"),
    ),
    appended(
      invalidate,
      "invalid-utf8",
      "reason bytes 6f 6b ff fe",
      lenField(2, INVALID_UTF8),
      invalidOrRequest("reason"),
    ),
    appended(invalidate, "wrong-type", "reason (field 2) sent as varint", varintField(2, 3), wrongType("reason")),
  ];
}

function promptAssemblyCases(): BadInputCase[] {
  const sql = SQL_METACHARACTERS;
  const section = (key: string, value: string) => ({ key, text: value });
  return [
    typed(
      buildRequest,
      "empty",
      "sections[0].key empty",
      (b) => ({ ...b, sections: [section("", "x")] }),
      invalid("sections[0].key"),
    ),
    typed(buildRequest, "empty", "model empty", (b) => ({ ...b, model: "" }), invalid("model")),
    typed(
      buildRequest,
      "empty",
      "tools[0].name empty",
      (b) => ({ ...b, tools: [{ name: "", description: "", inputSchemaJson: "{}" }] }),
      invalid("tools[0].name"),
    ),
    typed(
      buildRequest,
      "bad-value",
      'sections[1].key "current-date" (reserved)',
      (b) => ({ ...b, sections: [section("persona", "p"), section("current-date", "2020-01-01")] }),
      invalid("sections[1].key"),
    ),
    typed(
      buildRequest,
      "bad-value",
      'sections[1].key duplicate "persona"',
      (b) => ({ ...b, sections: [section("persona", "p"), section("persona", "q")] }),
      invalid("sections[1].key"),
    ),
    typed(
      buildRequest,
      "bad-value",
      'tools[0].input_schema_json "{not json"',
      (b) => ({ ...b, tools: [{ name: "shell", description: "", inputSchemaJson: "{not json" }] }),
      invalid("tools[0].input_schema_json"),
    ),
    typed(
      buildRequest,
      "bad-value",
      'tools[0].input_schema_json "[1,2]" (not an object)',
      (b) => ({ ...b, tools: [{ name: "shell", description: "", inputSchemaJson: "[1,2]" }] }),
      invalid("tools[0].input_schema_json"),
    ),
    typed(
      buildRequest,
      "bad-value",
      'tools[1].name duplicate "shell"',
      (b) => ({
        ...b,
        tools: [
          { name: "shell", description: "", inputSchemaJson: "{}" },
          { name: "shell", description: "", inputSchemaJson: "{}" },
        ],
      }),
      invalid("tools[1].name"),
    ),
    typed(buildRequest, "bad-value", 'locale "fr"', (b) => ({ ...b, locale: "fr" }), invalid("locale")),
    typed(
      buildRequest,
      "bad-value",
      'rules_file.path relative "AGENTS.md"',
      (b) => ({ ...b, rulesSource: rulesFile("AGENTS.md") }),
      invalid("source.file.path", "rules_file.path"),
    ),
    typed(
      buildRequest,
      "unknown-enum",
      "wire_format = 99",
      (b) => ({ ...b, wireFormat: 99 as WireFormat }),
      invalid("wire_format"),
    ),
    typed(
      buildRequest,
      "unknown-enum",
      "wire_format = WIRE_FORMAT_UNSPECIFIED (0)",
      (b) => ({ ...b, wireFormat: WireFormat.WIRE_FORMAT_UNSPECIFIED }),
      invalid("wire_format"),
    ),
    appended(
      buildRequest,
      "unknown-enum",
      "wire_format = -1 (10-byte varint)",
      varintField(6, -1),
      invalid("wire_format"),
    ),
    typed(buildRequest, "negative-or-overflow", "min_seq = -1", (b) => ({ ...b, minSeq: -1 }), invalid("min_seq")),
    appended(
      buildRequest,
      "negative-or-overflow",
      "min_seq = 2^63-1",
      varintField(2, INT64_MAX),
      invalidOrRequest("min_seq"),
    ),
    typed(
      buildRequest,
      "negative-or-overflow",
      "context_window = 0",
      (b) => ({ ...b, contextWindow: 0 }),
      invalid("context_window"),
    ),
    typed(
      buildRequest,
      "negative-or-overflow",
      "max_output_tokens = 0",
      (b) => ({ ...b, maxOutputTokens: 0 }),
      invalid("max_output_tokens"),
    ),
    appended(
      buildRequest,
      "wrong-type",
      "min_seq (field 2) sent length-delimited",
      stringField(2, "1"),
      wrongType("min_seq"),
    ),
    appended(
      buildRequest,
      "wrong-type",
      "embed (field 11) sent length-delimited",
      stringField(11, "true"),
      wrongType("embed"),
    ),
    appended(buildRequest, "wrong-type", "sections (field 3) sent as varint", varintField(3, 1), wrongType("sections")),
    typed(
      buildRequest,
      "oversized",
      "sections[0].text of 10 MB",
      (b) => ({ ...b, sections: [section("persona", tenMegabytes())] }),
      tooLarge("sections[0].text"),
    ),
    typed(buildRequest, "oversized", "model of 10 MB", (b) => ({ ...b, model: tenMegabytes() }), tooLarge("model")),
    typed(
      buildRequest,
      "oversized",
      "model of 100 KB",
      (b) => ({ ...b, model: "m".repeat(100_000) }),
      tooLarge("model"),
    ),
    typed(
      buildRequest,
      "oversized",
      "tools[0].description of 10 MB",
      (b) => ({ ...b, tools: [{ name: "shell", description: tenMegabytes(), inputSchemaJson: "{}" }] }),
      tooLarge("tools[0].description"),
    ),
    typed(
      buildRequest,
      "oversized",
      "rules_content.text of 10 MB",
      (b) => ({ ...b, rulesSource: rulesContent(tenMegabytes()) }),
      tooLarge("rules_content.text"),
    ),
    appended(
      buildRequest,
      "invalid-utf8",
      "sections[0].text bytes 6f 6b ff fe",
      lenField(3, concatBytes(stringField(1, "persona"), lenField(2, INVALID_UTF8))),
      invalidOrRequest("sections[0].text"),
      (b) => ({
        ...b,
        sections: [],
      }),
    ),
    appended(
      buildRequest,
      "invalid-utf8",
      "model bytes 6f 6b ff fe",
      lenField(7, INVALID_UTF8),
      invalidOrRequest("model"),
    ),
    ...sql.map(([label, v]) =>
      typed(
        buildRequest,
        "sql-metacharacters",
        `locale ${label}: ${JSON.stringify(v)}`,
        (b) => ({ ...b, locale: v }),
        invalid("locale"),
      ),
    ),
    ...sql.map(([label, v]) =>
      typed(
        buildRequest,
        "sql-metacharacters",
        `tools[0].name ${label}: ${JSON.stringify(v)}`,
        (b) => ({ ...b, tools: [{ name: v, description: "", inputSchemaJson: "{}" }] }),
        invalid("tools[0].name"),
      ),
    ),
    ...sql.map(([label, v]) =>
      typed(
        buildRequest,
        "sql-metacharacters",
        `sections[0].key ${label}: ${JSON.stringify(v)}`,
        (b) => ({ ...b, sections: [section(v, "persona text")] }),
        invalid("sections[0].key"),
      ),
    ),
  ];
}

function cacheMonitorCases(): BadInputCase[] {
  const sql = SQL_METACHARACTERS;
  const withUsage = (patch: Partial<UsageRecorded>) => (b: RecordUsageRequest) => ({ ...b, usage: usage(patch) });
  /** UsageRecorded (field 2 of RecordUsageRequest) with one hand-made field appended. */
  const usageWith = (raw: Uint8Array) => lenField(2, concatBytes(UsageRecordedBytes(usage()), raw));
  const noUsage = (b: RecordUsageRequest): RecordUsageRequest => ({ sessionId: b.sessionId });
  /** The baseline call sent as RecordUsageRequest.raw (an Anthropic usage object) with one thing broken. */
  const rawUsage = (patch: Partial<RawProviderUsage>) => (b: RecordUsageRequest) => ({
    sessionId: b.sessionId,
    raw: {
      provider: "anthropic",
      usageJson: '{"input_tokens":1000,"cache_read_input_tokens":11000,"output_tokens":200}',
      requestId: "req-bad-input-1",
      model: "claude-test",
      calledAtMs: 1_791_777_600_000,
      ...patch,
    },
  });
  return [
    typed(
      recordUsage,
      "bad-value",
      'raw.provider "mistral" (unknown provider)',
      rawUsage({ provider: "mistral" }),
      invalid("raw.provider"),
    ),
    typed(recordUsage, "empty", "raw.provider empty", rawUsage({ provider: "" }), invalid("raw.provider")),
    typed(
      recordUsage,
      "bad-value",
      "raw.usage_json malformed JSON",
      rawUsage({ usageJson: '{"input_tokens":1000,' }),
      invalid("raw.usage_json"),
    ),
    typed(recordUsage, "empty", "raw.usage_json empty", rawUsage({ usageJson: "" }), invalid("raw.usage_json")),
    typed(
      recordUsage,
      "empty",
      "raw.usage_json without input_tokens",
      rawUsage({ usageJson: '{"usage":{"cache_read_input_tokens":11000,"output_tokens":200}}' }),
      invalid("raw.usage_json.usage.input_tokens"),
    ),
    typed(
      recordUsage,
      "negative-or-overflow",
      "raw.usage_json output_tokens = -1",
      rawUsage({ usageJson: '{"input_tokens":1000,"output_tokens":-1}' }),
      invalid("raw.usage_json.output_tokens"),
    ),
    typed(
      recordUsage,
      "bad-value",
      "raw.usage_json input_tokens = 12.5 (not an integer)",
      rawUsage({ usageJson: '{"input_tokens":12.5,"output_tokens":1}' }),
      invalid("raw.usage_json.input_tokens"),
    ),
    typed(
      recordUsage,
      "bad-value",
      "usage and raw both set",
      (b) => ({ ...rawUsage({})(b), usage: b.usage }),
      invalid("raw"),
    ),
    typed(
      recordUsage,
      "oversized",
      "raw.usage_json of 10 MB",
      rawUsage({ usageJson: tenMegabytes() }),
      tooLarge("raw.usage_json"),
    ),
    typed(recordUsage, "empty", "usage missing", noUsage, invalid("usage")),
    typed(recordUsage, "empty", "usage.request_id empty", withUsage({ requestId: "" }), invalid("usage.request_id")),
    typed(recordUsage, "empty", "usage.model empty", withUsage({ model: "" }), invalid("usage.model")),
    typed(
      recordUsage,
      "empty",
      "usage.prompt_tokens = 0",
      withUsage({ promptTokens: 0 }),
      invalid("usage.prompt_tokens"),
    ),
    typed(
      recordUsage,
      "bad-value",
      "usage.cached_tokens 12001 > prompt_tokens 12000",
      withUsage({ cachedTokens: 12_001 }),
      invalid("usage.cached_tokens"),
    ),
    typed(
      recordUsage,
      "bad-value",
      "usage.cache_creation_tokens 2000 with cached 11000 of prompt 12000",
      withUsage({ cacheCreationTokens: 2_000 }),
      invalid("usage.cache_creation_tokens"),
    ),
    typed(
      recordUsage,
      "bad-value",
      "usage.reported_cost = NaN",
      withUsage({ reportedCost: Number.NaN }),
      invalid("usage.reported_cost"),
    ),
    typed(
      recordUsage,
      "bad-value",
      "usage.reported_cost = +Infinity",
      withUsage({ reportedCost: Number.POSITIVE_INFINITY }),
      invalid("usage.reported_cost"),
    ),
    typed(
      recordUsage,
      "negative-or-overflow",
      "usage.reported_cost = -0.5",
      withUsage({ reportedCost: -0.5 }),
      invalid("usage.reported_cost"),
    ),
    typed(
      recordUsage,
      "negative-or-overflow",
      "usage.called_at_ms = -1",
      withUsage({ calledAtMs: -1 }),
      invalid("usage.called_at_ms"),
    ),
    appended(
      recordUsage,
      "negative-or-overflow",
      "usage.prompt_tokens = 2^64-1 (uint64 beyond a safe JS integer)",
      usageWith(varintField(3, 2n ** 64n - 1n)),
      invalidOrRequest("usage.prompt_tokens"),
      noUsage,
    ),
    appended(
      recordUsage,
      "negative-or-overflow",
      "usage.called_at_ms = 2^63-1",
      usageWith(varintField(10, INT64_MAX)),
      invalidOrRequest("usage.called_at_ms"),
      noUsage,
    ),
    typed(
      recordUsage,
      "oversized",
      "usage.model of 201 characters",
      withUsage({ model: "m".repeat(201) }),
      invalid("usage.model"),
    ),
    typed(
      recordUsage,
      "oversized",
      "usage.model of 10 MB",
      withUsage({ model: tenMegabytes() }),
      tooLarge("usage.model"),
    ),
    typed(
      recordUsage,
      "oversized",
      "usage.provider_report.raw_json of 10 MB",
      withUsage({
        providerReport: {
          cacheMissReason: "",
          cacheReadInputTokens: 0,
          cacheCreationInputTokens: 0,
          openaiCachedTokens: 0,
          rawJson: tenMegabytes(),
        },
      }),
      tooLarge("usage.provider_report.raw_json"),
    ),
    appended(
      recordUsage,
      "invalid-utf8",
      "usage.model bytes 6f 6b ff fe",
      usageWith(lenField(2, INVALID_UTF8)),
      invalidOrRequest("usage.model"),
      noUsage,
    ),
    appended(
      recordUsage,
      "invalid-utf8",
      "usage.request_id bytes 6f 6b ff fe",
      usageWith(lenField(1, INVALID_UTF8)),
      invalidOrRequest("usage.request_id"),
      noUsage,
    ),
    appended(
      recordUsage,
      "wrong-type",
      "usage (field 2) sent as varint",
      varintField(2, 1),
      wrongType("usage"),
      noUsage,
    ),
    appended(
      recordUsage,
      "wrong-type",
      "usage.prompt_tokens (field 3) sent length-delimited",
      usageWith(stringField(3, "12000")),
      wrongType("usage.prompt_tokens"),
      noUsage,
    ),
    appended(
      recordUsage,
      "unknown-field",
      "usage carrying unknown field 99",
      usageWith(varintField(99, 1)),
      unknownField(99, "usage"),
      noUsage,
    ),
    ...sql.map(([label, v]) =>
      typed(
        recordUsage,
        "sql-metacharacters",
        `usage.request_id ${label}: ${JSON.stringify(v)}`,
        withUsage({ requestId: v }),
        invalid("usage.request_id"),
      ),
    ),
  ];
}

const UsageRecordedBytes = (value: UsageRecorded) => UsageRecordedFns.encode(value).finish();

/** The whole table. Batches run in this order; the DB checksums are compared after each. */
export const BATCH_ORDER: readonly Batch[] = [
  "empty",
  "oversized",
  "wrong-type",
  "unknown-field",
  "unknown-enum",
  "negative-or-overflow",
  "invalid-utf8",
  "sql-metacharacters",
  "bad-value",
  "malformed-frame",
];

export function badInputCases(): BadInputCase[] {
  return [
    ...perRpcCases(ALL_RPCS),
    ...sessionEventsCases(),
    ...rulesSnapshotCases(),
    ...promptAssemblyCases(),
    ...cacheMonitorCases(),
  ];
}
