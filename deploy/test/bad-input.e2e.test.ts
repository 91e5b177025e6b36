// The bad-input suite (docs/decisions/bad-input-suite.md): every RPC of the four services (started
// by startStack on MariaDB), fed the table in bad-input-cases.ts as raw protobuf bytes. Each input
// must get a clear status (INVALID_ARGUMENT naming the field, or RESOURCE_EXHAUSTED for size; never
// OK, never INTERNAL, never a hang) and must leave every table of every service database
// byte-identical. Free text is the exception that proves the SQL is parameterised: hostile text in
// a valid request is stored verbatim.

import {
  type Client,
  credentials,
  Metadata,
  makeGenericClientConstructor,
  type ServiceDefinition,
  type ServiceError,
  status,
} from "@grpc/grpc-js";
import { createDatabase } from "@prefix-guard/db";
import { callUnary } from "@prefix-guard/grpc";
import {
  type PromptAssemblyClient,
  PromptAssemblyService,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import { CacheMonitorService, RecordUsageRequest } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import {
  Decision,
  type RulesSnapshotClient,
  RulesSnapshotService,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import {
  type SessionEventsClient,
  SessionEventsService,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ALL_RPCS,
  BATCH_ORDER,
  type BadInputCase,
  badInputCases,
  baselineRequest,
  type Expected,
  type Fixture,
  type ServiceName,
} from "./bad-input-cases";
import { type DatabaseState, databaseState, diffStates, type ServiceDatabase, tableNames } from "./db-state";
import { type Stack, type ServiceName as StackService, startStack } from "./stack";
import { mainSessionRequest, userTextMessage } from "./support";

const FIXED_NOW = Date.UTC(2026, 9, 12, 4, 0); // 12:00 in Asia/Shanghai
const now = () => FIXED_NOW;
const CALL_DEADLINE_MS = 20_000;
const WORKSPACE = "/srv/ws/bad-input";
const RULES_TEXT = "# Rules\n- use pnpm\n";
/** Responses may be big (a 10 MB body would be the symptom of an accepted input): never cut them. */
const CLIENT_OPTIONS = { "grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1 };

// ---------------------------------------------------------------------------------------------
// Raw gRPC: the real method paths with identity serializers, so the bytes sent are the case's bytes.

/** A generated-at-runtime client: one method per RPC, named like the proto method. */
type RawClient = Client & { readonly [method: string]: unknown };
type RawCallback = (error: ServiceError | null, response?: Buffer) => void;
type RawMethod = (request: Buffer, metadata: Metadata, options: { deadline: number }, callback: RawCallback) => void;

function rawClient(definition: Record<string, { readonly path: string }>, address: string): RawClient {
  const identity = (bytes: Buffer) => bytes;
  const methods: Record<string, ServiceDefinition[string]> = {};
  for (const method of Object.values(definition)) {
    const name = method.path.slice(method.path.lastIndexOf("/") + 1);
    methods[name] = {
      path: method.path,
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    };
  }
  const Constructor = makeGenericClientConstructor(methods, "RawBytes");
  return new Constructor(address, credentials.createInsecure(), CLIENT_OPTIONS) as RawClient;
}

interface Outcome {
  readonly code: status;
  readonly details: string;
  /** The pg-field trailer, or the "field: message" prefix of the details. */
  readonly field: string | undefined;
  readonly ms: number;
}

function sendRaw(client: RawClient, method: string, request: Uint8Array): Promise<Outcome> {
  const call = client[method] as RawMethod | undefined;
  if (call === undefined) throw new Error(`raw client has no method ${method}`);
  const started = performance.now();
  return new Promise((resolve) => {
    call.call(
      client,
      Buffer.from(request.buffer, request.byteOffset, request.byteLength),
      new Metadata(),
      { deadline: Date.now() + CALL_DEADLINE_MS },
      (error) => {
        const ms = Math.round(performance.now() - started);
        if (error === null) return resolve({ code: status.OK, details: "", field: undefined, ms });
        const trailer = error.metadata?.get("pg-field")[0];
        const details = error.details ?? "";
        const field = typeof trailer === "string" ? trailer : /^([A-Za-z0-9_.[\]]+): /.exec(details)?.[1];
        resolve({ code: error.code, details, field, ms });
      },
    );
  });
}

/** Empty when the outcome is what the case expects; otherwise what went wrong. */
function judge(expected: Expected, outcome: Outcome): string {
  const got = `${status[outcome.code]}${outcome.field ? `(${outcome.field})` : ""} "${outcome.details.slice(0, 160)}"`;
  if (outcome.code === status.OK) return "ACCEPTED (OK)";
  if (expected.code === "TOO_LARGE") {
    if (outcome.code === status.RESOURCE_EXHAUSTED) return "";
    if (outcome.code === status.INVALID_ARGUMENT && outcome.field === expected.field) return "";
    return `expected RESOURCE_EXHAUSTED or INVALID_ARGUMENT(${expected.field}), got ${got}`;
  }
  const wanted = `INVALID_ARGUMENT${expected.fields ? `(${expected.fields.join(" | ")})` : ""}`;
  if (outcome.code !== status.INVALID_ARGUMENT) return `expected ${wanted}, got ${got}`;
  if (expected.fields !== null && (outcome.field === undefined || !expected.fields.includes(outcome.field))) {
    return `expected ${wanted}, got ${got}`;
  }
  if (expected.details !== undefined && !expected.details.test(outcome.details)) {
    return `expected ${wanted} with details matching ${expected.details}, got ${got}`;
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// "Nothing changed": row count + sha256 of every row (ordered by primary key) of every table.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("bad input on every RPC (real MariaDB, embedded bus)", () => {
  const databases: Record<string, ServiceDatabase> = {};
  let stack: Stack | undefined;
  let sessions: SessionEventsClient;
  let rules: RulesSnapshotClient;
  let assembly: PromptAssemblyClient;
  let raw: Record<ServiceName, RawClient>;

  const databaseStateNow = () => databaseState(databases);

  /**
   * Service databases whose outbox relay is blocked by a process outside this test: the relays take
   * a server-wide GET_LOCK named after the service only, so another run of the same service on this
   * MariaDB server (another database) holds it and ours never publishes (see the report).
   */
  async function relaysBlockedElsewhere(): Promise<Set<string>> {
    const ours = new Set(Object.values(databases).map((db) => db.name));
    const blocked = new Set<string>();
    const admin = Object.values(databases)[0]?.db;
    if (admin === undefined) return blocked;
    for (const label of Object.keys(databases)) {
      const [rows] = (await admin.raw("SELECT IS_USED_LOCK(?) AS holder", [`prefix-guard:${label}:relay`])) as [
        Array<{ holder: number | null }>,
      ];
      const holder = rows[0]?.holder;
      if (holder === null || holder === undefined) continue;
      const [owners] = (await admin.raw("SELECT DB AS db FROM information_schema.PROCESSLIST WHERE ID = ?", [
        holder,
      ])) as [Array<{ db: string | null }>];
      if (!ours.has(owners[0]?.db ?? "")) blocked.add(label);
    }
    return blocked;
  }

  /** Unpublished outbox rows per database label and table (session_event is session-events' outbox). */
  async function unpublishedRows(): Promise<Map<string, number>> {
    const pending = new Map<string, number>();
    for (const [label, db] of Object.entries(databases)) {
      const tables = await tableNames(db);
      for (const table of ["session_event", "outbox_message"]) {
        if (!tables.includes(table)) continue;
        const row = await db.db(table).whereNull("published_at_ms").count({ n: "*" }).first();
        if (Number(row?.n ?? 0) > 0) pending.set(`${label}.${table}`, Number(row?.n));
      }
    }
    return pending;
  }

  const totalOf = (pending: Map<string, number>) => [...pending.values()].reduce((a, b) => a + b, 0);
  /** Rows left unpublished by a blocked relay when the databases were last settled. */
  let backlog = new Map<string, number>();

  /**
   * Waits until the relays have published everything they can and no table changed for three polls.
   * A relay blocked by another process is reported once and waited for no longer.
   */
  async function settledState(timeoutMs = 20_000): Promise<DatabaseState> {
    const deadline = Date.now() + timeoutMs;
    let previous = await databaseStateNow();
    let stableRounds = 0;
    let changing: string[] = [];
    let pending = new Map<string, number>();
    while (Date.now() < deadline) {
      await sleep(200);
      const current = await databaseStateNow();
      changing = diffStates(previous, current);
      pending = await unpublishedRows();
      const blocked = pending.size > 0 ? await relaysBlockedElsewhere() : new Set<string>();
      const waitingFor = [...pending.keys()].filter((key) => !blocked.has(key.slice(0, key.indexOf("."))));
      stableRounds = changing.length === 0 && waitingFor.length === 0 ? stableRounds + 1 : 0;
      previous = current;
      if (stableRounds >= 3) {
        if (pending.size > 0 && totalOf(pending) !== totalOf(backlog)) {
          const list = [...pending].map(([key, n]) => `${key}: ${n}`).join(", ");
          process.stdout.write(`bad-input: relays blocked by another process on this server, unpublished ${list}\n`);
        }
        backlog = pending;
        return current;
      }
    }
    const list = [...pending].map(([key, n]) => `${key}: ${n}`).join(", ");
    throw new Error(
      `databases did not settle in ${timeoutMs} ms: changing [${changing.join("; ")}], unpublished [${list}]`,
    );
  }

  /** True when a relay that was blocked has started draining its backlog (so changes are not the input's). */
  async function backlogDraining(): Promise<boolean> {
    if (backlog.size === 0) return false;
    const pending = await unpublishedRows();
    return [...backlog].some(([key, n]) => (pending.get(key) ?? 0) < n);
  }

  const deadline = { deadlineMs: CALL_DEADLINE_MS };

  async function createFixture(label: string): Promise<Fixture> {
    const sessionId = `bi-${label}`;
    const sideSessionId = `${sessionId}-side`;
    const owner = "u1";
    const session = {
      owner,
      workspace: WORKSPACE,
      timezone: "Asia/Shanghai",
      parentSessionId: "",
      continuedFromSessionId: "",
    };
    await callUnary(
      sessions,
      sessions.createSession,
      { ...session, sessionId, kind: SessionKind.SESSION_KIND_MAIN, personalTerms: [], locale: "" },
      deadline,
    );
    await callUnary(
      sessions,
      sessions.createSession,
      {
        ...session,
        sessionId: sideSessionId,
        kind: SessionKind.SESSION_KIND_SIDE,
        parentSessionId: sessionId,
        personalTerms: [],
        locale: "",
      },
      deadline,
    );
    const say = (role: Role, text: string) =>
      callUnary(
        sessions,
        sessions.saveMessage,
        { sessionId, role, content: [{ part: { $case: "text", value: { text } } }], thinkingText: "" },
        deadline,
      );
    const first = await say(Role.ROLE_USER, "压测重试");
    const second = await say(Role.ROLE_ASSISTANT, "好的");
    const pinned = await callUnary(
      rules,
      rules.resolve,
      {
        sessionId,
        workspace: WORKSPACE,
        source: { $case: "content", value: { text: RULES_TEXT } },
        compactionGeneration: 0,
        embed: false,
        locale: "",
      },
      deadline,
    );
    expect(pinned.decision).toBe(Decision.DECISION_PINNED);
    const fixture: Fixture = {
      sessionId,
      sideSessionId,
      firstMessageId: first.messageId,
      secondMessageId: second.messageId,
      lastSeq: second.seq,
      newSessionId: `${sessionId}-new`,
      owner,
      workspace: WORKSPACE,
      rulesText: RULES_TEXT,
    };
    const built = await sendRaw(raw.promptAssembly, "BuildRequest", baselineRequest("BuildRequest", fixture));
    expect(built.code, built.details).toBe(status.OK);
    return fixture;
  }

  beforeAll(async () => {
    stack = await startStack({
      store: "mariadb",
      cacheMonitor: true,
      now,
      serviceEnv: {
        // Fixtures are created in parallel; a slow pool must not turn a pin into DEGRADED_RAW.
        "rules-snapshot": { CONSUMER_GROUP: "bad-input-rules", RULES_DB_TIMEOUT_MS: "10000" },
        "prompt-assembly": { CONSUMER_GROUP: "bad-input-assembly" },
        "cache-monitor": { CONSUMER_GROUP: "bad-input-monitor" },
      },
    });
    const services: readonly StackService[] = ["session-events", "rules-snapshot", "prompt-assembly", "cache-monitor"];
    for (const service of services) {
      const url = stack.databaseUrl(service);
      const database = { name: decodeURIComponent(new URL(url).pathname.slice(1)), db: createDatabase(url) };
      // The checksums below see this database's tables only through its name: it must be the right one.
      expect(await tableNames(database), service).not.toEqual([]);
      databases[service] = database;
    }
    sessions = stack.sessions;
    rules = stack.rules;
    assembly = stack.assembly();
    const address = stack.addresses;
    raw = {
      sessionEvents: rawClient(SessionEventsService, address["session-events"]),
      rulesSnapshot: rawClient(RulesSnapshotService, address["rules-snapshot"]),
      promptAssembly: rawClient(PromptAssemblyService, address["prompt-assembly"]),
      cacheMonitor: rawClient(CacheMonitorService, address["cache-monitor"]),
    };
  });

  afterAll(async () => {
    for (const client of Object.values(raw ?? {})) client.close();
    for (const database of Object.values(databases)) await database.db.destroy();
    await stack?.stop();
  });

  it("rejects every bad input with a clear status and changes no row of any service database", async () => {
    // One control and one target fixture per RPC: the control proves the baseline request is valid
    // (it must succeed), the target receives the broken variants of that same request.
    const controls = new Map<string, Fixture>();
    const targets = new Map<string, Fixture>();
    // One RPC at a time: concurrent first builds have deadlocked in prompt-assembly (see the report).
    for (const rpc of ALL_RPCS) {
      controls.set(rpc.method, await createFixture(`c-${rpc.method}`));
      targets.set(rpc.method, await createFixture(`t-${rpc.method}`));
    }
    for (const rpc of ALL_RPCS) {
      const control = controls.get(rpc.method);
      if (control === undefined) throw new Error(`no control fixture for ${rpc.method}`);
      const outcome = await sendRaw(raw[rpc.service], rpc.method, rpc.baselineBytes(control));
      expect(outcome.code, `baseline ${rpc.method} must be valid: ${outcome.details}`).toBe(status.OK);
    }

    const anyTarget = targets.values().next().value;
    const cases = badInputCases();
    const problems: string[] = [];
    const changedInputs = new Set<BadInputCase>();
    let before = await settledState();
    let current = before;
    let rejected = 0;
    const describeCase = (c: BadInputCase) => `${c.service}.${c.method} [${c.batch}] ${c.input}`;

    for (const batch of BATCH_ORDER) {
      const inBatch = cases.filter((c) => c.batch === batch);
      for (const badCase of inBatch) {
        // FollowEvents takes no session: its rows build their requests without one, any fixture serves.
        const target = targets.get(badCase.method) ?? (badCase.method === "FollowEvents" ? anyTarget : undefined);
        if (target === undefined) throw new Error(`no target fixture for ${badCase.method}`);
        // A fresh id per input, so one wrongly accepted CreateSession cannot turn the next into ALREADY_EXISTS.
        const fixture = { ...target, newSessionId: `${target.newSessionId}-${cases.indexOf(badCase)}` };
        const outcome = await sendRaw(raw[badCase.service], badCase.method, badCase.request(fixture));
        const verdict = judge(badCase.expected, outcome);
        if (verdict === "") rejected += 1;
        else problems.push(`${describeCase(badCase)}: ${verdict}`);
        if (outcome.code === status.DEADLINE_EXCEEDED)
          problems.push(`${describeCase(badCase)}: HUNG for ${outcome.ms} ms`);
        // Writes commit before the response, so the called service's change is visible now; what its
        // events cause downstream is absorbed by settling, so the next input starts from a quiet state.
        const after = await databaseStateNow();
        const changes = diffStates(current, after);
        if (changes.length > 0) {
          if (await backlogDraining()) {
            // A foreign run released the relay lock and ours is publishing what it held back: the
            // consumers' work is not this input's doing. An accepted input is still caught by judge().
            process.stdout.write(`bad-input: relay backlog drained during ${describeCase(badCase)}; re-baselined\n`);
            current = await settledState(60_000);
            before = current;
            continue;
          }
          changedInputs.add(badCase);
          problems.push(`${describeCase(badCase)}: CHANGED THE DATABASE: ${changes.join("; ")}`);
          current = await settledState();
        }
      }
      const draining = await backlogDraining();
      const settled = await settledState(draining ? 60_000 : 20_000);
      const late = diffStates(current, settled);
      if (late.length > 0 && !draining)
        problems.push(`batch ${batch}: the databases changed after the batch: ${late.join("; ")}`);
      if (draining) before = settled;
      current = settled;
    }

    const totalChange = diffStates(before, current);
    process.stdout.write(
      `bad-input: ${cases.length} inputs tried, ${rejected} rejected with a clear error, ${changedInputs.size} changed the database\n`,
    );
    if (problems.length > 0) process.stdout.write(`bad-input problems:\n  ${problems.join("\n  ")}\n`);
    expect(problems).toEqual([]);
    expect(totalChange).toEqual([]);
    expect(rejected).toBe(cases.length);
  }, 600_000);

  it("stores hostile free text verbatim: the SQL is parameterised and every table still exists", async () => {
    const tablesBefore = await Promise.all(Object.values(databases).map(tableNames));
    const se = databases["session-events"];
    if (se === undefined) throw new Error("no session-events database");
    const eventCount = async () => Number((await se.db("session_event").count({ n: "*" }).first())?.n);
    const eventsBefore = await eventCount();
    const hostile =
      "'; DROP TABLE session_event; -- \" OR 1=1 -- a\\'b\\\\c\\ \u0000 `x` UNION SELECT * FROM session --";
    // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
    const hostileWithoutControls = hostile.replace(/[\u0000-\u001f]/g, "");
    const sessionId = "bi-free-text";
    const workspace = '/srv/ws/it\'s "quoted"; DROP TABLE session; --';

    await callUnary(sessions, sessions.createSession, mainSessionRequest(sessionId, workspace), deadline);
    const userMessage = await callUnary(sessions, sessions.saveMessage, userTextMessage(sessionId, hostile), deadline);
    const argumentsJson = JSON.stringify({ cmd: hostile });
    await callUnary(
      sessions,
      sessions.saveMessage,
      {
        sessionId,
        role: Role.ROLE_ASSISTANT,
        content: [{ part: { $case: "toolCall", value: { callId: "call-1", name: "shell", argumentsJson } } }],
        thinkingText: hostile,
      },
      deadline,
    );
    const toolResult = await callUnary(
      sessions,
      sessions.saveMessage,
      {
        sessionId,
        role: Role.ROLE_TOOL,
        content: [{ part: { $case: "toolResult", value: { callId: "call-1", text: hostile, isError: false } } }],
        thinkingText: "",
      },
      deadline,
    );

    const listed = await callUnary(sessions, sessions.listMessages, { sessionId, includeDeleted: false }, deadline);
    const parts = listed.messages.map((m) => m.content[0]?.part);
    expect(parts[0]).toMatchObject({ $case: "text", value: { text: hostile } });
    expect(parts[1]).toMatchObject({ $case: "toolCall", value: { callId: "call-1", name: "shell", argumentsJson } });
    expect(parts[2]).toMatchObject({ $case: "toolResult", value: { callId: "call-1", text: hostile, isError: false } });
    const stored = await se.db("message").where({ session_id: sessionId, role: "assistant" }).first("thinking_text");
    expect(stored?.thinking_text).toBe(hostile);
    expect((await callUnary(sessions, sessions.getSession, { sessionId }, deadline)).workspace).toBe(workspace);

    const compacted = await callUnary(
      sessions,
      sessions.commitCompaction,
      {
        sessionId,
        expectedGeneration: 0,
        boundaryMessageId: userMessage.messageId,
        summary: `摘要 ${hostile}`,
        personalTerms: [],
      },
      deadline,
    );
    expect(compacted.summary).toContain("DROP TABLE session_event");
    expect((await callUnary(sessions, sessions.getSession, { sessionId }, deadline)).summary).toBe(compacted.summary);

    const resolved = await callUnary(
      rules,
      rules.resolve,
      {
        sessionId,
        workspace,
        source: { $case: "content", value: { text: hostile } },
        compactionGeneration: compacted.generation,
        embed: false,
        locale: "",
      },
      deadline,
    );
    expect(resolved.decision).toBe(Decision.DECISION_PINNED);
    expect(resolved.sectionText).toContain(hostile);
    const snapshot = await callUnary(rules, rules.get, { sessionId }, deadline);
    expect(snapshot.snapshot?.workspace).toBe(workspace);
    expect(snapshot.snapshot?.rulesText).toBe(resolved.sectionText);

    const built = await callUnary(
      assembly,
      assembly.buildRequest,
      {
        sessionId,
        minSeq: compacted.seq,
        sections: [{ key: "persona", text: hostile }],
        tools: [{ name: "shell", description: hostile, inputSchemaJson: '{"type":"object"}' }],
        wireFormat: WireFormat.WIRE_FORMAT_OPENAI_CHAT,
        model: "claude-test",
        workspace,
        rulesSource: { $case: "rulesContent", value: { text: hostile } },
        embed: false,
        locale: "en",
      },
      deadline,
    );
    const body = JSON.parse(built.bodyJson) as unknown;
    const strings: string[] = [];
    const collect = (value: unknown): void => {
      if (typeof value === "string") strings.push(value);
      else if (value !== null && typeof value === "object") for (const v of Object.values(value)) collect(v);
    };
    collect(body);
    expect(strings).toContain(hostile); // the persona section (and the tool description) byte for byte
    expect(strings.some((s) => s.includes(argumentsJson) || s === argumentsJson || s.includes(hostile))).toBe(true);
    expect(toolResult.seq).toBeLessThan(compacted.seq);

    const recorded = await sendRaw(
      raw.cacheMonitor,
      "RecordUsage",
      RecordUsageRequest.encode({
        sessionId,
        usage: {
          requestId: built.requestId,
          // A model name is an identifier: SQL metacharacters yes, control characters no (rejected by validation).
          model: hostileWithoutControls,
          promptTokens: 12_000,
          cachedTokens: 0,
          completionTokens: 10,
          cacheCreationTokens: 0,
          provider: "anthropic",
          providerReport: {
            cacheMissReason: hostile,
            cacheReadInputTokens: 0,
            cacheCreationInputTokens: 0,
            openaiCachedTokens: 0,
            rawJson: JSON.stringify({ reason: hostile }),
          },
          calledAtMs: FIXED_NOW,
        },
        idempotencyKey: "",
        providerResponseId: "",
        unbuilt: false,
      }).finish(),
    );
    expect(recorded.code, recorded.details).toBe(status.OK);
    const cm = databases["cache-monitor"];
    if (cm === undefined) throw new Error("no cache-monitor database");
    const usageRow = await cm.db("cm_usage").where({ session_id: sessionId }).first("model", "provider_report_json");
    expect(usageRow?.model).toBe(hostileWithoutControls);
    const report: unknown = JSON.parse(String(usageRow?.provider_report_json));
    const reportStrings: string[] = [];
    const collectReport = (value: unknown): void => {
      if (typeof value === "string") reportStrings.push(value);
      else if (value !== null && typeof value === "object") for (const v of Object.values(value)) collectReport(v);
    };
    collectReport(report);
    expect(reportStrings).toContain(hostile);

    const invalidated = await callUnary(
      rules,
      rules.invalidate,
      { sessionId, reason: hostileWithoutControls },
      deadline,
    );
    expect(invalidated.removed).toBe(true);

    // Still there: every table of every database, and the rows written before the suite.
    expect(await Promise.all(Object.values(databases).map(tableNames))).toEqual(tablesBefore);
    // CreateSession, three SaveMessage and CommitCompaction appended five events; none went missing.
    expect(await eventCount()).toBe(eventsBefore + 5);
  });
});
