// The bad-input table (docs/decisions/bad-input-suite.md): every RPC of session-events,
// rules-snapshot and prompt-assembly, fed empty, oversized, wrong-type and hostile values. Each
// case is a VALID baseline request for a live fixture with exactly one thing broken, so a rejection
// can only be caused by that one thing, and an acceptance would really write (and show up in the DB
// checksums).
//
// Requests are raw protobuf bytes: typed values go through ts-proto's encoder, everything the
// encoder cannot produce (invalid UTF-8, wrong wire types, unknown field numbers, int64 beyond
// 2^53, truncated frames) is appended by hand. Protobuf is last-wins for a scalar field, so an
// appended field overrides the baseline's value of the same number.

import { MAX_JSON_DEPTH, MAX_JSON_ELEMENTS } from "@prefix-guard/events/json-limits";
import {
  BuildRequestRequest,
  RebuildProjectionRequest,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { type ContentPart, Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import { UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
import {
  type RawProviderUsage,
  RecordUsageRequest,
  TraceSessionRequest,
} from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { GetRequest, InvalidateRequest, ResolveRequest } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import {
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
// The services' own limits, so a row breaks exactly the one the service enforces, and the scrubber's
// worst shapes (accepted, so not rows: see acceptedHostileSummaries).
import { MAX_SECTIONS, MAX_TOOLS } from "../../services/prompt-assembly/src/domain/validation";
import { hostileSummaries } from "../../services/session-events/test/hostile-summaries";

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
/** A JSON field nested past MAX_JSON_DEPTH, or with more than MAX_JSON_ELEMENTS (pg-reason json_too_deep / json_too_many_elements). */
const jsonTooDeep = (field: string): Expected => ({
  code: "INVALID_ARGUMENT",
  fields: [field],
  details: new RegExp(`deeper than ${MAX_JSON_DEPTH} levels`),
});
const jsonTooManyElements = (field: string): Expected => ({
  code: "INVALID_ARGUMENT",
  fields: [field],
  details: new RegExp(`more than ${MAX_JSON_ELEMENTS} elements`),
});

// ---------------------------------------------------------------------------------------------
// Hostile values.

export const TEN_MB = 10 * 1024 * 1024;
const tenMegabytes = () => "x".repeat(TEN_MB);

/** JSON arrays (or objects with key "a") nested `depth` levels deep. */
const nestedArrays = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const nestedObjects = (depth: number) => `${'{"a":'.repeat(depth)}{}${"}".repeat(depth)}`;
/** A JSON array of `count` zeros: count + 1 elements (the array and each value). */
const zeros = (count: number) => `[${Array.from({ length: count }, () => "0").join(",")}]`;

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

const rpc = <T extends { sessionId: string }>(
  service: ServiceName,
  method: string,
  fns: Encoder<T>,
  baseline: (f: Fixture) => T,
): RpcSpec<T> => ({ service, method, fns, baseline });

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
const section = (key: string, value: string) => ({ key, text: value });
const tool = (name: string, description = "", inputSchemaJson = "{}") => ({ name, description, inputSchemaJson });

const createSession = rpc("sessionEvents", "CreateSession", CreateSessionRequest, (f) => ({
  sessionId: f.newSessionId,
  owner: f.owner,
  workspace: f.workspace,
  timezone: "Asia/Shanghai",
  kind: SessionKind.SESSION_KIND_MAIN,
  parentSessionId: "",
  continuedFromSessionId: "",
  personalTerms: [],
  locale: "",
}));
const saveMessage = rpc("sessionEvents", "SaveMessage", SaveMessageRequest, (f) => ({
  sessionId: f.sessionId,
  role: Role.ROLE_USER,
  content: [text("继续")],
  thinkingText: "",
}));
const deleteMessage = rpc("sessionEvents", "DeleteMessage", DeleteMessageRequest, (f) => ({
  sessionId: f.sessionId,
  messageId: f.secondMessageId,
}));
const commitCompaction = rpc("sessionEvents", "CommitCompaction", CommitCompactionRequest, (f) => ({
  sessionId: f.sessionId,
  expectedGeneration: 0,
  boundaryMessageId: f.firstMessageId,
  summary: "用户在做压测重试",
  personalTerms: [],
}));
const deleteSession = rpc("sessionEvents", "DeleteSession", DeleteSessionRequest, (f) => ({
  sessionId: f.sessionId,
}));
const promoteSideTask = rpc("sessionEvents", "PromoteSideTask", PromoteSideTaskRequest, (f) => ({
  sessionId: f.sideSessionId,
}));
const readEvents = rpc("sessionEvents", "ReadEvents", ReadEventsRequest, (f) => ({
  sessionId: f.sessionId,
  afterSeq: 0,
  limit: 10,
}));
const getSession = rpc("sessionEvents", "GetSession", GetSessionRequest, (f) => ({ sessionId: f.sessionId }));
const listMessages = rpc("sessionEvents", "ListMessages", ListMessagesRequest, (f) => ({
  sessionId: f.sessionId,
  includeDeleted: false,
}));
const resolve = rpc("rulesSnapshot", "Resolve", ResolveRequest, (f) => ({
  sessionId: f.sessionId,
  workspace: f.workspace,
  source: contentSource(f.rulesText),
  compactionGeneration: 0,
  embed: false,
  locale: "",
}));
const invalidate = rpc("rulesSnapshot", "Invalidate", InvalidateRequest, (f) => ({
  sessionId: f.sessionId,
  reason: "bad-input baseline",
}));
const getSnapshot = rpc("rulesSnapshot", "Get", GetRequest, (f) => ({ sessionId: f.sessionId }));
const buildRequest = rpc("promptAssembly", "BuildRequest", BuildRequestRequest, (f) => ({
  sessionId: f.sessionId,
  minSeq: f.lastSeq,
  sections: ["persona", "experiences", "memories", "environment"].map((k) => section(k, `${k} text`)),
  tools: [tool("shell", "run a command", '{"type":"object"}')],
  wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
  model: "claude-test",
  workspace: f.workspace,
  rulesSource: rulesContent(f.rulesText),
  embed: false,
  locale: "zh-CN",
}));
const rebuildProjection = rpc("promptAssembly", "RebuildProjection", RebuildProjectionRequest, (f) => ({
  sessionId: f.sessionId,
}));

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
// unbuilt: the baseline's request_id names no build (this suite builds nothing for cache-monitor).
const recordUsage = rpc("cacheMonitor", "RecordUsage", RecordUsageRequest, (f) => ({
  sessionId: f.sessionId,
  usage: usage(),
  idempotencyKey: "",
  providerResponseId: "",
  unbuilt: true,
}));
const traceSession = rpc("cacheMonitor", "TraceSession", TraceSessionRequest, (f) => ({
  sessionId: f.sessionId,
  limit: 10,
}));

interface ErasedSpec {
  readonly service: ServiceName;
  readonly method: string;
  readonly baselineBytes: (f: Fixture) => Uint8Array;
  readonly withSessionId: (f: Fixture, sessionId: string) => Uint8Array;
  /**
   * The fields named when the session id is missing (an empty request) or bad; "session_id" for
   * both unless the RPC takes its ids otherwise (GetDataKeys: a list, "session_ids" / "session_ids[0]").
   */
  readonly idFields?: { readonly missing: string; readonly bad: string; readonly appended: string };
}

function erase<T extends { sessionId: string }>(spec: RpcSpec<T>): ErasedSpec {
  return {
    service: spec.service,
    method: spec.method,
    baselineBytes: (f) => spec.fns.encode(spec.baseline(f)).finish(),
    withSessionId: (f, sessionId) => spec.fns.encode({ ...spec.baseline(f), sessionId }).finish(),
  };
}

/** GetDataKeys takes its ids as a list (field 1, repeated): the baseline asks for the fixture's key. */
const getDataKeys: ErasedSpec = {
  service: "sessionEvents",
  method: "GetDataKeys",
  baselineBytes: (f) => GetDataKeysRequest.encode({ sessionIds: [f.sessionId] }).finish(),
  withSessionId: (_f, sessionId) => GetDataKeysRequest.encode({ sessionIds: [sessionId] }).finish(),
  // Field 1 appended after the baseline adds a second id rather than replacing the first.
  idFields: { missing: "session_ids", bad: "session_ids[0]", appended: "session_ids[1]" },
};

/**
 * Every RPC that takes a required session id as field 1, in the order the suite exercises them.
 * CacheMonitor.ListCollapses is not here: its session_id is an optional filter ("" = all sessions).
 */
export const ALL_RPCS: readonly ErasedSpec[] = [
  erase(createSession),
  erase(saveMessage),
  erase(deleteMessage),
  erase(commitCompaction),
  erase(deleteSession),
  erase(promoteSideTask),
  erase(readEvents),
  erase(getSession),
  erase(listMessages),
  getDataKeys,
  erase(resolve),
  erase(invalidate),
  erase(getSnapshot),
  erase(buildRequest),
  erase(rebuildProjection),
  erase(recordUsage),
  erase(traceSession),
];

/** The valid request of each RPC, used once per RPC on a control fixture to prove the baselines pass. */
export function baselineRequest(method: string, f: Fixture): Uint8Array {
  const spec = ALL_RPCS.find((s) => s.method === method);
  if (spec === undefined) throw new Error(`no baseline for ${method}`);
  return spec.baselineBytes(f);
}

// ---------------------------------------------------------------------------------------------
// The session_id every RPC shares: the same breakages for all of them.

function sessionIdCases(spec: ErasedSpec): BadInputCase[] {
  const after = (raw: Uint8Array) => (f: Fixture) => concatBytes(spec.baselineBytes(f), raw);
  const withId = (value: string) => (f: Fixture) => spec.withSessionId(f, value);
  const { missing, bad, appended } = spec.idFields ?? {
    missing: "session_id",
    bad: "session_id",
    appended: "session_id",
  };
  const rows: ReadonlyArray<readonly [Batch, string, (f: Fixture) => Uint8Array, Expected]> = [
    // CreateSession generates an id when none is given, so its first required field is the owner.
    [
      "empty",
      "empty request (0 bytes)",
      () => new Uint8Array(0),
      invalid(spec.method === "CreateSession" ? "owner" : missing),
    ],
    ...BAD_IDS.map(
      ([label, value, batch]) =>
        [batch, `${bad} ${label}: ${JSON.stringify(value)}`, withId(value), invalid(bad)] as const,
    ),
    ["oversized", `${bad} of 10 MB`, withId(tenMegabytes()), tooLarge(bad)],
    [
      "invalid-utf8",
      `${appended} bytes 6f 6b ff fe (invalid UTF-8)`,
      after(lenField(1, INVALID_UTF8)),
      invalidOrRequest(appended),
    ],
    [
      "invalid-utf8",
      `${appended} bytes 6f 6b ed a0 80 (UTF-8-encoded lone surrogate U+D800)`,
      after(lenField(1, SURROGATE_UTF8)),
      invalidOrRequest(appended),
    ],
    [
      "wrong-type",
      `${appended} (field 1) sent as varint 7 instead of a string`,
      after(varintField(1, 7)),
      wrongType(appended),
    ],
    ["unknown-field", "unknown field 99 (varint 1) after a valid request", after(varintField(99, 1)), unknownField(99)],
    [
      "unknown-field",
      'unknown field 99 (string "x") after a valid request',
      after(stringField(99, "x")),
      unknownField(99),
    ],
    [
      "malformed-frame",
      "truncated: a length-delimited field 2 claiming 50 bytes with 2 present",
      after(Uint8Array.from([0x12, 50, 0x61, 0x62])),
      anyInvalid(),
    ],
    [
      "malformed-frame",
      "unterminated varint (bytes 08 ff ff ff)",
      after(Uint8Array.from([0x08, 0xff, 0xff, 0xff])),
      anyInvalid(),
    ],
  ];
  return rows.map(([batch, input, request, expected]) => ({
    batch,
    service: spec.service,
    method: spec.method,
    input,
    request,
    expected,
  }));
}

// ---------------------------------------------------------------------------------------------
// The per-RPC tables. Each RPC declares where its fields are on the wire, which fields each generic
// breakage applies to, and its own cases as rows of (batch, input, mutation, expected).

/** How a case breaks the baseline: a patch of the typed request, or hand-made bytes appended after it
 * (optionally after a patch that removes what the bytes replace). */
type Mutation<T> = ((base: T, f: Fixture) => T) | Uint8Array | readonly [raw: Uint8Array, patch: (base: T) => T];
/** Without `expected`: INVALID_ARGUMENT naming the field the input starts with. */
type Row<T> = readonly [batch: Batch, input: string, mutation: Mutation<T>, expected?: Expected];
/** Where a field is on the wire: its number, and how one encoded field is placed in the request. */
type Wire<T> = number | readonly [field: number, place: (rawField: Uint8Array) => Mutation<T>];
/** A string field: its path (a top-level field is set by name) or its path and how to set it. */
type StringField<T> = string | readonly [path: string, set: (base: T, value: string) => T];

interface Table<T extends { sessionId: string }> {
  readonly wire?: Readonly<Record<string, Wire<T>>>;
  /** "<path> empty": rejected naming the field. */
  readonly required?: readonly StringField<T>[];
  /** Each of SQL_METACHARACTERS: rejected naming the field (none is a valid value there); "<path> <note>" to add a note. */
  readonly sql?: readonly StringField<T>[];
  /** "<path> of 10 MB": the transport's cap or the field's; [path, set, reported field] when another field is named. */
  readonly tenMegabytes?: readonly (StringField<T> | readonly [string, (base: T, value: string) => T, string])[];
  /** Bytes that are not UTF-8 in a string field (by `wire`): the invalid pair, or another kind with a note. */
  readonly utf8?: readonly (string | readonly [path: string, kind: keyof typeof BAD_UTF8, note?: string])[];
  /** The field (by `wire`) with the wrong wire type: a number is sent as a varint, a string length-delimited. */
  readonly wrongType?: readonly (readonly [path: string, value: number | string])[];
  /** Enum fields (by `wire`): 99 (unknown) and -1 (a 10-byte varint) are rejected. */
  readonly enums?: readonly string[];
  /** int64 fields: -1 (top-level, typed) is rejected. */
  readonly negative?: readonly string[];
  /** int64 fields (by `wire`): 2^63-1 is rejected (beyond a safe JS integer). */
  readonly int64Max?: readonly string[];
  readonly rows?: readonly Row<T>[];
}

const BAD_UTF8 = {
  invalid: [INVALID_UTF8, "6f 6b ff fe"],
  overlong: [OVERLONG_UTF8, "2f c0 af (overlong '/')"],
  surrogate: [SURROGATE_UTF8, "6f 6b ed a0 80 (lone surrogate U+D800 as UTF-8)"],
} as const;

const MAX_SAFE_PLUS_ONE = 2n ** 53n;
const INT64_MAX = 2n ** 63n - 1n;

const camel = (path: string) => path.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
/** A patch that sets one top-level field by its proto name. */
const set =
  <T>(path: string, value: unknown) =>
  (base: T): T => ({ ...base, [camel(path)]: value });
const setter = <T>(field: StringField<T>): readonly [string, (base: T, value: string) => T] =>
  typeof field === "string" ? [field, (base, value) => set<T>(field, value)(base)] : field;

function expand<T extends { sessionId: string }>(spec: RpcSpec<T>, table: Table<T>): BadInputCase[] {
  const rows: Row<T>[] = [];
  const place = (path: string, field: (n: number) => Uint8Array): Mutation<T> => {
    const wire = table.wire?.[path];
    if (wire === undefined) throw new Error(`${spec.method}: no wire position for ${path}`);
    return typeof wire === "number" ? field(wire) : wire[1](field(wire[0]));
  };
  const fieldNumber = (path: string) => {
    const wire = table.wire?.[path];
    return typeof wire === "number" ? wire : wire?.[0];
  };
  for (const [path, put] of (table.required ?? []).map(setter))
    rows.push(["empty", `${path} empty`, (b) => put(b, "")]);
  for (const [path, put] of (table.sql ?? []).map(setter))
    for (const [label, v] of SQL_METACHARACTERS)
      rows.push(["sql-metacharacters", `${path} ${label}: ${JSON.stringify(v)}`, (b) => put(b, v)]);
  for (const entry of table.tenMegabytes ?? []) {
    const [path, put] = setter(typeof entry === "string" ? entry : [entry[0], entry[1]]);
    const reported = typeof entry !== "string" && entry.length === 3 ? entry[2] : path;
    rows.push(["oversized", `${path} of 10 MB`, (b) => put(b, tenMegabytes()), tooLarge(reported)]);
  }
  for (const entry of table.utf8 ?? []) {
    const [path, kind, note] = typeof entry === "string" ? [entry, "invalid" as const] : entry;
    const [bytes, shown] = BAD_UTF8[kind];
    const input = `${path} bytes ${shown}${note === undefined ? "" : ` ${note}`}`;
    rows.push(["invalid-utf8", input, place(path, (n) => lenField(n, bytes)), invalidOrRequest(path)]);
  }
  for (const [path, value] of table.wrongType ?? []) {
    const how = typeof value === "number" ? "as varint" : "length-delimited";
    const raw = (n: number) => (typeof value === "number" ? varintField(n, value) : stringField(n, value));
    rows.push(["wrong-type", `${path} (field ${fieldNumber(path)}) sent ${how}`, place(path, raw), wrongType(path)]);
  }
  for (const path of table.enums ?? []) {
    rows.push(["unknown-enum", `${path} = 99`, set<T>(path, 99)]);
    rows.push(["unknown-enum", `${path} = -1 (10-byte varint)`, place(path, (n) => varintField(n, -1))]);
  }
  for (const path of table.negative ?? []) rows.push(["negative-or-overflow", `${path} = -1`, set<T>(path, -1)]);
  for (const path of table.int64Max ?? []) {
    const raw = place(path, (n) => varintField(n, INT64_MAX));
    rows.push(["negative-or-overflow", `${path} = 2^63-1`, raw, invalidOrRequest(path)]);
  }
  rows.push(...(table.rows ?? []));
  return rows.map(([batch, input, mutation, expected]) => ({
    batch,
    service: spec.service,
    method: spec.method,
    input,
    expected: expected ?? invalid(input.split(" ")[0] ?? input),
    request: (f: Fixture) => {
      const base = spec.baseline(f);
      if (typeof mutation === "function") return spec.fns.encode(mutation(base, f)).finish();
      const [raw, patch] = mutation instanceof Uint8Array ? [mutation, (b: T) => b] : mutation;
      return concatBytes(spec.fns.encode(patch(base)).finish(), raw);
    },
  }));
}

const withContent =
  (...content: ContentPart[]) =>
  (b: SaveMessageRequest): SaveMessageRequest => ({ ...b, content });
const asAssistant =
  (part: (v: string) => ContentPart) =>
  (b: SaveMessageRequest, v: string): SaveMessageRequest => ({ ...b, role: Role.ROLE_ASSISTANT, content: [part(v)] });
const noContent = (b: SaveMessageRequest): SaveMessageRequest => ({ ...b, content: [] });

const sessionEventsTables = [
  expand(createSession, {
    wire: { owner: 2, workspace: 3, timezone: 4, kind: 5 },
    required: ["owner"],
    sql: ["owner", "timezone", "parent_session_id", "continued_from_session_id"],
    tenMegabytes: ["workspace"],
    utf8: ["owner", ["workspace", "invalid", "(free text, but not text)"], ["workspace", "overlong"], "timezone"],
    wrongType: [
      ["kind", "MAIN"],
      ["owner", 1],
    ],
    enums: ["kind"],
    rows: [
      ["bad-value", 'timezone "Mars/Olympus_Mons"', set("timezone", "Mars/Olympus_Mons")],
      ["oversized", "owner of 129 characters", set("owner", "o".repeat(129))],
      ["oversized", "workspace of 1025 characters", set("workspace", `/${"w".repeat(1024)}`)],
      [
        "bad-value",
        "kind SIDE without parent_session_id",
        set("kind", SessionKind.SESSION_KIND_SIDE),
        invalid("parent_session_id"),
      ],
      [
        "bad-value",
        "parent_session_id equal to session_id",
        (b) => ({ ...b, kind: SessionKind.SESSION_KIND_SIDE, parentSessionId: b.sessionId }),
      ],
    ],
  }),
  expand(saveMessage, {
    wire: {
      role: 2,
      content: 3,
      thinking_text: 4,
      expected_seq: 5,
      "content[0].text": [1, (raw) => [lenField(3, lenField(1, raw)), noContent]],
    },
    sql: [
      ["content[0].image.media_type", (b, v) => withContent(image(v, "https://example.com/a.png"))(b)],
      ["content[0].tool_call.call_id", asAssistant((v) => toolCall(v, "shell", "{}"))],
      ["content[0].tool_call.name", asAssistant((v) => toolCall("c1", v, "{}"))],
      ["content[0].tool_result.call_id", (b, v) => ({ ...b, role: Role.ROLE_TOOL, content: [toolResult(v, "ok")] })],
    ],
    tenMegabytes: [
      ["content[0].text", (b, v) => withContent(text(v))(b), "content"],
      ["thinking_text", (b, v) => ({ ...b, thinkingText: v }), "content"],
    ],
    utf8: ["content[0].text", ["content[0].text", "surrogate"], "thinking_text"],
    wrongType: [
      ["role", "ROLE_USER"],
      ["content", 1],
    ],
    enums: ["role"],
    negative: ["expected_seq"],
    int64Max: ["expected_seq"],
    rows: [
      ["empty", "content empty (no parts)", noContent],
      ["empty", "content[0].text empty", withContent(text(""))],
      ["empty", "content[0] with no part set (empty ContentPart)", [lenField(3, new Uint8Array(0)), noContent]],
      ["unknown-enum", "role = ROLE_UNSPECIFIED (0)", set("role", Role.ROLE_UNSPECIFIED)],
      [
        "negative-or-overflow",
        "expected_seq = 2^53 (beyond a safe JS integer)",
        varintField(5, MAX_SAFE_PLUS_ONE),
        invalidOrRequest("expected_seq"),
      ],
      [
        "oversized",
        "101 content parts",
        withContent(...Array.from({ length: 101 }, (_, i) => text(`p${i}`))),
        invalid("content"),
      ],
      [
        "oversized",
        "content[0].text of 1.5 MB (over the 1 MB message cap)",
        withContent(text("y".repeat(1_500_000))),
        tooLarge("content"),
      ],
      [
        "bad-value",
        'content[0].image.url "http://example.com/a.png" (not https)',
        withContent(image("image/png", "http://example.com/a.png")),
      ],
      ["bad-value", 'content[0].image.url "javascript:alert(1)"', withContent(image("", "javascript:alert(1)"))],
      [
        "bad-value",
        "content[0].tool_call.arguments_json \"{'a':1}\" (not JSON)",
        (b) => asAssistant((v) => toolCall("c1", "shell", v))(b, "{'a':1}"),
      ],
      [
        "oversized",
        `content[0].tool_call.arguments_json nested ${MAX_JSON_DEPTH + 1} objects deep`,
        (b) => asAssistant((v) => toolCall("c1", "shell", v))(b, nestedObjects(MAX_JSON_DEPTH + 1)),
        jsonTooDeep("content[0].tool_call.arguments_json"),
      ],
      [
        "oversized",
        "content[0].tool_call.arguments_json of 500,000 open brackets",
        (b) => asAssistant((v) => toolCall("c1", "shell", v))(b, "[".repeat(500_000)),
        jsonTooDeep("content[0].tool_call.arguments_json"),
      ],
      [
        "oversized",
        `content[0].tool_call.arguments_json of ${MAX_JSON_ELEMENTS + 1} elements`,
        (b) => asAssistant((v) => toolCall("c1", "shell", v))(b, zeros(MAX_JSON_ELEMENTS)),
        jsonTooManyElements("content[0].tool_call.arguments_json"),
      ],
      [
        "oversized",
        `content[1].tool_call.arguments_json nested ${MAX_JSON_DEPTH + 1} arrays deep, after a valid part`,
        (b) => ({
          ...b,
          role: Role.ROLE_ASSISTANT,
          content: [toolCall("c1", "shell", "{}"), toolCall("c2", "shell", nestedArrays(MAX_JSON_DEPTH + 1))],
        }),
        jsonTooDeep("content[1].tool_call.arguments_json"),
      ],
    ],
  }),
  expand(deleteMessage, {
    wire: { message_id: 2, expected_seq: 3 },
    required: ["message_id"],
    sql: ["message_id"],
    utf8: ["message_id"],
    wrongType: [["message_id", 5]],
    negative: ["expected_seq"],
    int64Max: ["expected_seq"],
  }),
  expand(commitCompaction, {
    wire: { expected_generation: 2, summary: 4 },
    required: ["summary", "boundary_message_id"],
    sql: ["boundary_message_id"],
    tenMegabytes: ["summary"],
    utf8: ["summary"],
    wrongType: [["expected_generation", "0"]],
    rows: [
      ["empty", "summary whitespace only", set("summary", " \n\t ")],
      ["oversized", "summary of 20001 characters", set("summary", "总".repeat(20_001)), tooLarge("summary")],
    ],
  }),
  expand(readEvents, {
    wire: { after_seq: 2, limit: 3 },
    wrongType: [["limit", "10"]],
    negative: ["after_seq"],
    int64Max: ["after_seq"],
    rows: [
      ["negative-or-overflow", "limit = -1 as varint (uint32 4294967295)", varintField(3, -1)],
      ["oversized", "limit = 1001", set("limit", 1001)],
    ],
  }),
  expand(listMessages, { wire: { include_deleted: 2 }, wrongType: [["include_deleted", "true"]] }),
];

const inSource = (raw: Uint8Array) => lenField(4, raw);
const rulesSnapshotTables = [
  expand(resolve, {
    wire: {
      workspace: 2,
      compaction_generation: 5,
      embed: 6,
      "source.content": 4,
      "source.content.text": [1, inSource],
      "source.file.path": [1, (raw) => lenField(3, raw)],
      known_rules_hash: 9,
    },
    sql: [["source.file.path relative", (b, v) => ({ ...b, source: fileSource(v) })], "known_rules_hash"],
    tenMegabytes: ["workspace"],
    utf8: ["workspace", "source.content.text", ["source.file.path", "overlong"], "known_rules_hash"],
    wrongType: [
      ["compaction_generation", "0"],
      ["embed", "true"],
      ["source.content", 1],
      ["known_rules_hash", 1],
    ],
    rows: [
      ["bad-value", 'known_rules_hash "abc" (not a sha256)', set("known_rules_hash", "abc")],
      ["bad-value", "known_rules_hash in upper-case hex", set("known_rules_hash", "A".repeat(64))],
      ["oversized", "known_rules_hash of 65 hex characters", set("known_rules_hash", "a".repeat(65))],
      ["empty", "workspace empty (not embed)", set("workspace", "")],
      // No source is not bad input: it means nothing was reported (seed 001 §3.4), answered from the snapshot.
      ["empty", "source.file.path empty", set("source", fileSource(""))],
      ["bad-value", 'source.file.path relative "AGENTS.md"', set("source", fileSource("AGENTS.md"))],
      [
        "sql-metacharacters",
        'source.file.path with NUL "/tmp/AGENTS.md\\u0000.txt"',
        set("source", fileSource("/tmp/AGENTS.md\u0000.txt")),
      ],
      ["oversized", "workspace of 513 characters", set("workspace", `/${"w".repeat(512)}`)],
      ["oversized", "source.file.path of 1025 characters", set("source", fileSource(`/${"p".repeat(1024)}`))],
      [
        "oversized",
        "source.content.text of 10 MB (one line)",
        (b) => ({ ...b, source: contentSource(tenMegabytes()) }),
        tooLarge("source.content.text"),
      ],
      [
        "negative-or-overflow",
        "compaction_generation = -1 as varint (uint32 4294967295; the column is a signed INT)",
        varintField(5, -1),
      ],
      [
        "negative-or-overflow",
        "compaction_generation = 2147483648 (one past the signed INT column)",
        set("compaction_generation", 2_147_483_648),
      ],
    ],
  }),
  expand(invalidate, {
    wire: { reason: 2 },
    tenMegabytes: ["reason"],
    utf8: ["reason"],
    wrongType: [["reason", 3]],
    rows: [["oversized", "reason of 100 KB", set("reason", "r".repeat(100_000)), tooLarge("reason")]],
  }),
];

const withTools =
  (...tools: ReturnType<typeof tool>[]) =>
  (b: BuildRequestRequest): BuildRequestRequest => ({ ...b, tools });
const withSections =
  (...sections: ReturnType<typeof section>[]) =>
  (b: BuildRequestRequest): BuildRequestRequest => ({ ...b, sections });
const withCacheMode =
  (mode: string) =>
  (b: BuildRequestRequest): BuildRequestRequest => ({ ...b, cache: { retention: "", previousResponseId: "", mode } });
const promptAssemblyTables = [
  expand(buildRequest, {
    wire: {
      min_seq: 2,
      sections: 3,
      wire_format: 6,
      model: 7,
      embed: 11,
      "sections[0].text": [2, (raw) => [lenField(3, concatBytes(stringField(1, "persona"), raw)), withSections()]],
    },
    required: [
      "model",
      ["sections[0].key", (b, v) => withSections(section(v, "x"))(b)],
      ["tools[0].name", (b, v) => withTools(tool(v))(b)],
    ],
    sql: [
      "locale",
      ["tools[0].name", (b, v) => withTools(tool(v))(b)],
      ["sections[0].key", (b, v) => withSections(section(v, "persona text"))(b)],
    ],
    tenMegabytes: [
      ["sections[0].text", (b, v) => withSections(section("persona", v))(b)],
      "model",
      ["tools[0].description", (b, v) => withTools(tool("shell", v))(b)],
      ["rules_content.text", (b, v) => ({ ...b, rulesSource: rulesContent(v) })],
    ],
    utf8: ["sections[0].text", "model"],
    wrongType: [
      ["min_seq", "1"],
      ["embed", "true"],
      ["sections", 1],
    ],
    enums: ["wire_format"],
    negative: ["min_seq"],
    int64Max: ["min_seq"],
    rows: [
      [
        "bad-value",
        'sections[1].key "current-date" (reserved)',
        withSections(section("persona", "p"), section("current-date", "2020-01-01")),
      ],
      [
        "bad-value",
        'sections[1].key duplicate "persona"',
        withSections(section("persona", "p"), section("persona", "q")),
      ],
      ["bad-value", 'tools[0].input_schema_json "{not json"', withTools(tool("shell", "", "{not json"))],
      ["bad-value", 'tools[0].input_schema_json "[1,2]" (not an object)', withTools(tool("shell", "", "[1,2]"))],
      ["bad-value", 'tools[1].name duplicate "shell"', withTools(tool("shell"), tool("shell"))],
      ["bad-value", 'locale "fr"', set("locale", "fr")],
      // cache.mode: only the modes the wire format has (anthropic_messages: "automatic"), exactly as spelled.
      ["bad-value", 'cache.mode "forever"', withCacheMode("forever")],
      ["bad-value", 'cache.mode "explicit" (an OpenAI mode, sent for anthropic_messages)', withCacheMode("explicit")],
      ["bad-value", 'cache.mode "Automatic" (modes are lower case)', withCacheMode("Automatic")],
      ["oversized", "cache.mode of 100 KB", withCacheMode("m".repeat(100_000)), invalid("cache.mode")],
      [
        "bad-value",
        'rules_file.path relative "AGENTS.md"',
        set("rules_source", rulesFile("AGENTS.md")),
        invalid("source.file.path", "rules_file.path"),
      ],
      // Files outside the session's workspace are refused before anything is opened, and the answer
      // carries no OS error text (README "Files the servers read").
      ...["/etc/passwd", "/proc/self/environ", "/srv/ws/bad-input/../other/AGENTS.md", "/dev/zero"].map(
        (path): Row<BuildRequestRequest> => [
          "bad-value",
          `rules_file.path ${JSON.stringify(path)} (outside the workspace)`,
          set("rules_source", rulesFile(path)),
          // No errno names (ENOENT, EACCES ...) in the answer: it must not tell what exists on the host.
          {
            code: "INVALID_ARGUMENT",
            fields: ["source.file.path", "rules_file.path"],
            details: /^(?![\s\S]*\bE[A-Z]{3,}\b)/,
          },
        ],
      ),
      [
        "unknown-enum",
        "wire_format = WIRE_FORMAT_UNSPECIFIED (0)",
        set("wire_format", WireFormat.WIRE_FORMAT_UNSPECIFIED),
      ],
      ["negative-or-overflow", "context_window = 0", set("context_window", 0)],
      ["negative-or-overflow", "max_output_tokens = 0", set("max_output_tokens", 0)],
      ["oversized", "model of 100 KB", set("model", "m".repeat(100_000)), tooLarge("model")],
      [
        "oversized",
        `sections: ${MAX_SECTIONS + 1} (at most ${MAX_SECTIONS})`,
        withSections(...Array.from({ length: MAX_SECTIONS + 1 }, (_, i) => section(`s${i}`, "x"))),
        invalid("sections"),
      ],
      [
        "oversized",
        `tools: ${MAX_TOOLS + 1} (at most ${MAX_TOOLS})`,
        withTools(...Array.from({ length: MAX_TOOLS + 1 }, (_, i) => tool(`t${i}`, "", '{"type":"object"}'))),
        invalid("tools"),
      ],
      [
        "oversized",
        `tools[0].input_schema_json nested ${MAX_JSON_DEPTH + 1} objects deep`,
        withTools(tool("shell", "", nestedObjects(MAX_JSON_DEPTH + 1))),
        jsonTooDeep("tools[0].input_schema_json"),
      ],
      [
        "oversized",
        "tools[1].input_schema_json of 60,000 open brackets, after a valid tool",
        withTools(tool("shell", "", '{"type":"object"}'), tool("grep", "", `{"a":${"[".repeat(60_000)}`)),
        jsonTooDeep("tools[1].input_schema_json"),
      ],
    ],
  }),
];

const withUsage = (patch: Partial<UsageRecorded>) => (b: RecordUsageRequest) => ({ ...b, usage: usage(patch) });
const noUsage = (b: RecordUsageRequest): RecordUsageRequest => ({ ...b, usage: undefined });
/** UsageRecorded (field 2 of RecordUsageRequest) with one hand-made field appended, instead of the baseline's. */
const inUsage = (raw: Uint8Array) =>
  [lenField(2, concatBytes(UsageRecorded.encode(usage()).finish(), raw)), noUsage] as const;
/** The baseline call sent as RecordUsageRequest.raw (an Anthropic usage object) with one thing broken. */
const rawUsage = (patch: Partial<RawProviderUsage>) => (b: RecordUsageRequest) => ({
  ...b,
  usage: undefined,
  raw: {
    provider: "anthropic",
    usageJson: '{"input_tokens":1000,"cache_read_input_tokens":11000,"output_tokens":200}',
    requestId: "req-bad-input-1",
    model: "claude-test",
    calledAtMs: 1_791_777_600_000,
    ...patch,
  },
});
const usageField =
  (name: keyof UsageRecorded) =>
  (b: RecordUsageRequest, v: string): RecordUsageRequest =>
    withUsage({ [name]: v })(b);

const cacheMonitorTables = [
  expand(recordUsage, {
    wire: {
      usage: [2, (raw) => [raw, noUsage]],
      "usage.request_id": [1, inUsage],
      "usage.model": [2, inUsage],
      "usage.prompt_tokens": [3, inUsage],
      "usage.called_at_ms": [10, inUsage],
    },
    required: [
      ["raw.provider", (b, v) => rawUsage({ provider: v })(b)],
      ["raw.usage_json", (b, v) => rawUsage({ usageJson: v })(b)],
      ["usage.request_id", usageField("requestId")],
      ["usage.model", usageField("model")],
    ],
    sql: [["usage.request_id", usageField("requestId")]],
    tenMegabytes: [
      ["raw.usage_json", (b, v) => rawUsage({ usageJson: v })(b)],
      ["usage.model", usageField("model")],
      [
        "usage.provider_report.raw_json",
        (b, rawJson) =>
          withUsage({
            providerReport: {
              cacheMissReason: "",
              cacheReadInputTokens: 0,
              cacheCreationInputTokens: 0,
              openaiCachedTokens: 0,
              rawJson,
            },
          })(b),
      ],
    ],
    utf8: ["usage.model", "usage.request_id"],
    wrongType: [
      ["usage", 1],
      ["usage.prompt_tokens", "12000"],
    ],
    int64Max: ["usage.called_at_ms"],
    rows: [
      ["bad-value", 'raw.provider "mistral" (unknown provider)', rawUsage({ provider: "mistral" })],
      ["bad-value", "raw.usage_json malformed JSON", rawUsage({ usageJson: '{"input_tokens":1000,' })],
      [
        "empty",
        "raw.usage_json without input_tokens",
        rawUsage({ usageJson: '{"usage":{"cache_read_input_tokens":11000,"output_tokens":200}}' }),
        invalid("raw.usage_json.usage.input_tokens"),
      ],
      [
        "negative-or-overflow",
        "raw.usage_json output_tokens = -1",
        rawUsage({ usageJson: '{"input_tokens":1000,"output_tokens":-1}' }),
        invalid("raw.usage_json.output_tokens"),
      ],
      [
        "bad-value",
        "raw.usage_json input_tokens = 12.5 (not an integer)",
        rawUsage({ usageJson: '{"input_tokens":12.5,"output_tokens":1}' }),
        invalid("raw.usage_json.input_tokens"),
      ],
      ["bad-value", "usage and raw both set", (b) => ({ ...rawUsage({})(b), usage: b.usage }), invalid("raw")],
      ["empty", "usage missing", noUsage],
      ["empty", "usage.prompt_tokens = 0", withUsage({ promptTokens: 0 })],
      ["bad-value", "usage.cached_tokens 12001 > prompt_tokens 12000", withUsage({ cachedTokens: 12_001 })],
      [
        "bad-value",
        "usage.cache_creation_tokens 2000 with cached 11000 of prompt 12000",
        withUsage({ cacheCreationTokens: 2_000 }),
      ],
      ["bad-value", "usage.reported_cost = NaN", withUsage({ reportedCost: Number.NaN })],
      ["bad-value", "usage.reported_cost = +Infinity", withUsage({ reportedCost: Number.POSITIVE_INFINITY })],
      ["negative-or-overflow", "usage.reported_cost = -0.5", withUsage({ reportedCost: -0.5 })],
      ["negative-or-overflow", "usage.called_at_ms = -1", withUsage({ calledAtMs: -1 })],
      [
        "negative-or-overflow",
        "usage.prompt_tokens = 2^64-1 (uint64 beyond a safe JS integer)",
        inUsage(varintField(3, 2n ** 64n - 1n)),
        invalidOrRequest("usage.prompt_tokens"),
      ],
      ["oversized", "usage.model of 201 characters", withUsage({ model: "m".repeat(201) })],
      ["unknown-field", "usage carrying unknown field 99", inUsage(varintField(99, 1)), unknownField(99, "usage")],
      [
        "oversized",
        `raw.usage_json nested ${MAX_JSON_DEPTH + 1} objects deep`,
        rawUsage({ usageJson: `{"input_tokens":1000,"output_tokens":1,"x":${nestedObjects(MAX_JSON_DEPTH)}}` }),
        jsonTooDeep("raw.usage_json"),
      ],
      [
        "oversized",
        `usage.provider_report.raw_json nested ${MAX_JSON_DEPTH + 1} arrays deep`,
        withUsage({
          providerReport: {
            cacheMissReason: "",
            cacheReadInputTokens: 0,
            cacheCreationInputTokens: 0,
            openaiCachedTokens: 0,
            rawJson: nestedArrays(MAX_JSON_DEPTH + 1),
          },
        }),
        jsonTooDeep("usage.provider_report.raw_json"),
      ],
    ],
  }),
];

// ---------------------------------------------------------------------------------------------
// Hostile but valid: summaries shaped to make a scrubber backtrack, and the
// personal terms that go with them. They are not bad input, so they are no rows of the table:
// hostile-summaries.e2e.test.ts commits each through the running service and expects OK, and
// commit-compaction-scrub.int.test.ts bounds the scrubber's steps on the same shapes.

/** The most personal_terms CommitCompaction takes; more come from the user's own messages. */
const MAX_HARNESS_TERMS = 100;

export interface AcceptedCompaction {
  readonly input: string;
  readonly summary: string;
  /** CommitCompaction's personal_terms. */
  readonly personalTerms: readonly string[];
  /** User messages to save first, whose self-statements ("我叫…") give the session its own terms. */
  readonly userMessages: readonly string[];
}

export function acceptedHostileSummaries(): AcceptedCompaction[] {
  return hostileSummaries().map(({ name, summary, personalTerms }) => {
    if (personalTerms.length <= MAX_HARNESS_TERMS) return { input: name, summary, personalTerms, userMessages: [] };
    const statements = personalTerms.map((term) => `我叫${term}。`);
    const userMessages = Array.from({ length: Math.ceil(statements.length / 500) }, (_, i) =>
      statements.slice(i * 500, (i + 1) * 500).join(""),
    );
    return { input: name, summary, personalTerms: [], userMessages };
  });
}

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

/** GetDataKeys' list itself: its bounds, and a bad id after a good one (named by its index). */
function getDataKeysCases(): BadInputCase[] {
  const ids = (list: (f: Fixture) => string[]) => (f: Fixture) =>
    GetDataKeysRequest.encode({ sessionIds: list(f) }).finish();
  const rows: ReadonlyArray<readonly [Batch, string, (f: Fixture) => Uint8Array, Expected]> = [
    ["empty", "session_ids[1] empty (after a valid id)", ids((f) => [f.sessionId, ""]), invalid("session_ids[1]")],
    [
      "oversized",
      "session_ids with 101 ids (the most is 100)",
      ids((f) => Array.from({ length: 101 }, (_, i) => `${f.sessionId}-${i}`)),
      invalid("session_ids"),
    ],
    ...SQL_METACHARACTERS.map(
      ([label, value]) =>
        [
          "sql-metacharacters",
          `session_ids[1] ${label}: ${JSON.stringify(value)} (after a valid id)`,
          ids((f) => [f.sessionId, value]),
          invalid("session_ids[1]"),
        ] as const,
    ),
  ];
  return rows.map(([batch, input, request, expected]) => ({
    batch,
    service: "sessionEvents",
    method: "GetDataKeys",
    input,
    request,
    expected,
  }));
}

/**
 * FollowEvents takes no field: anything in its request is refused before a stream opens. (Sent by
 * the suite's unary framing; a refused server stream answers with its status alone.)
 */
function followEventsCases(): BadInputCase[] {
  const rows: ReadonlyArray<readonly [Batch, string, Uint8Array, Expected]> = [
    ["unknown-field", 'field 1 (string "s-1"): the request has no fields', stringField(1, "s-1"), unknownField(1)],
    ["unknown-field", "unknown field 99 (varint 1)", varintField(99, 1), unknownField(99)],
    [
      "malformed-frame",
      "truncated: a length-delimited field 2 claiming 50 bytes with 2 present",
      Uint8Array.from([0x12, 50, 0x61, 0x62]),
      anyInvalid(),
    ],
    [
      "malformed-frame",
      "unterminated varint (bytes 08 ff ff ff)",
      Uint8Array.from([0x08, 0xff, 0xff, 0xff]),
      anyInvalid(),
    ],
  ];
  return rows.map(([batch, input, bytes, expected]) => ({
    batch,
    service: "sessionEvents",
    method: "FollowEvents",
    input,
    request: () => bytes,
    expected,
  }));
}

export function badInputCases(): BadInputCase[] {
  return [
    ...ALL_RPCS.flatMap(sessionIdCases),
    ...getDataKeysCases(),
    ...followEventsCases(),
    ...sessionEventsTables.flat(),
    ...rulesSnapshotTables.flat(),
    ...promptAssemblyTables.flat(),
    ...cacheMonitorTables.flat(),
  ];
}
