// docs/decisions/crypto-shredding.md, the proof that erasure reaches every copy. Distinct canary
// strings go into every content field of several sessions (message text, an image's URL and data, a
// tool call's arguments, a tool result, thinking text, a compaction summary, a continuation's
// inherited summary, personal terms); every session is built and priced so every service holds rows
// of it. Then one family of sessions is deleted (DeleteSession) and another expires
// (SESSION_RETENTION_DAYS on the stack's clock), and the stores are read from outside, the way a
// backup or an attacker with broker access reads them: `mariadb-dump` of every service database (as
// text and with --hex-blob), `kcat` over every topic and every DLQ from the beginning, every outbox
// table, and the RPC answers. No erased canary may appear in any encoding (raw, hex, base64), nor
// the erased sessions' data keys; the live family's content is still there for its owner, opens
// with its key from GetDataKeys (libs/client), and its BuildRequest body is byte-identical to the
// one built before the erasures. Personal terms are never stored at all, not even sealed. The
// embedded mode (`make run`, SQLite) gets the same check on the raw bytes of its files.
//
// Controls keep the test from passing on an empty search: before the erasure, every erased canary is
// found by the same search, and the erased keys are in session-events' dump; after it, the live
// canaries still are.

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { credentials, type ServiceError } from "@grpc/grpc-js";
import { eventually, testKafkaBrokers } from "@prefix-guard/bus/testing";
import { createDataKeyClient, type DataKeyClient, openSealedEvent } from "@prefix-guard/client";
import { createDatabase } from "@prefix-guard/db";
import { decodeSessionEvent, dlqTopic, Topics } from "@prefix-guard/events";
import { bearerMetadata, callUnary, type UnaryCallOptions } from "@prefix-guard/grpc";
import {
  type BuildRequestRequest,
  PromptAssemblyClient,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { type ContentPart, Role } from "@prefix-guard/proto/common/v1/common";
import { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { CacheMonitorClient } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { GetResponse } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import {
  type DataKey,
  ListMessagesResponse,
  ReadEventsResponse,
  Session,
  SessionEventsClient,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServiceDatabase, settledDatabaseState } from "./db-state";
import { type PrincipalsFixture, type TestPrincipal, testToken, writePrincipalsFile } from "./principals-fixture";
import { type Stack, startStack } from "./stack";
import {
  claudeTestUsage,
  type EmbeddedSystem,
  mainSessionRequest,
  priceBuild,
  repoRoot,
  startEmbeddedSystem,
  type TurnClients,
} from "./support";

// ---------------------------------------------------------------------------------------------
// The tools (kcat, mariadb-dump): installed by deploy/scripts/erasure-tools.sh when missing.

function installErasureTools(): { ready: boolean; why: string } {
  const run = spawnSync("bash", [join(repoRoot, "deploy/scripts/erasure-tools.sh")], {
    cwd: repoRoot,
    encoding: "utf8",
    timeout: 540_000,
  });
  return { ready: run.status === 0, why: `erasure-tools.sh exit ${run.status}: ${(run.stderr ?? "").trim()}` };
}

function dumpTool(): string {
  for (const tool of ["mariadb-dump", "mysqldump"]) {
    if (spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0) return tool;
  }
  throw new Error("neither mariadb-dump nor mysqldump is on PATH");
}

// ---------------------------------------------------------------------------------------------
// Canaries. A family is a session with every kind of content and a compaction, and its
// continuation (which inherits the summary). Per session: the fields below; only parents compact.

type Family = "D" | "E" | "L";
type Label = `${Family}` | `${Family}C`;
type Field =
  | "text"
  | "imageUrl"
  | "imageData"
  | "toolArgs"
  | "toolResult"
  | "thinking"
  | "summary"
  | "compactionTerm"
  | "sessionTerm";

const MESSAGE_FIELDS: readonly Field[] = ["text", "imageUrl", "imageData", "toolArgs", "toolResult", "thinking"];
/** Personal terms: never stored or published at all, in any family, sealed or not. */
const TERM_FIELDS: readonly Field[] = ["compactionTerm", "sessionTerm"];

const fieldsOf = (label: Label): readonly Field[] =>
  label.endsWith("C")
    ? [...MESSAGE_FIELDS, "sessionTerm"]
    : [...MESSAGE_FIELDS, "summary", "compactionTerm", "sessionTerm"];

const canary = (run: string, label: Label, field: Field) => `CANARY-${run}-${label}-${field}`;

/** One way a canary (or a key) may sit in a store, named for the report. */
interface Needle {
  readonly name: string;
  readonly bytes: Buffer;
}

/**
 * The value as raw bytes, hex (both cases) and base64 at each of the three alignments (standard and
 * URL alphabets; only the characters the value alone decides, so a match does not depend on what
 * precedes or follows it in the store).
 */
function encodingsOf(name: string, value: Buffer): Needle[] {
  const needles: Needle[] = [
    { name: `${name} (raw)`, bytes: value },
    { name: `${name} (hex)`, bytes: Buffer.from(value.toString("hex")) },
    { name: `${name} (HEX)`, bytes: Buffer.from(value.toString("hex").toUpperCase()) },
  ];
  for (const offset of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(offset), value]).toString("base64");
    const first = [0, 2, 3][offset] ?? 0;
    const middle = encoded.slice(first, Math.floor((offset + value.length) / 3) * 4);
    needles.push({ name: `${name} (base64+${offset})`, bytes: Buffer.from(middle) });
    needles.push({
      name: `${name} (base64url+${offset})`,
      bytes: Buffer.from(middle.replaceAll("+", "-").replaceAll("/", "_")),
    });
  }
  return needles;
}

const canaryNeedles = (values: readonly string[]) => values.flatMap((v) => encodingsOf(v, Buffer.from(v, "utf8")));

// ---------------------------------------------------------------------------------------------
// Copies: what a store holds, as bytes with a name saying where. A source is searched as one blob
// first and split into its rows or records only to say where a needle was found.

interface Copy {
  readonly where: string;
  readonly bytes: Buffer;
}

interface Source {
  readonly where: string;
  readonly bytes: Buffer;
  parts(): Copy[];
}

/** "<needle> in <where>" for every needle found, each place once. */
function findNeedles(sources: readonly Source[], needles: readonly Needle[]): string[] {
  const found = new Set<string>();
  for (const source of sources) {
    const present = needles.filter((n) => source.bytes.includes(n.bytes));
    if (present.length === 0) continue;
    const parts = source.parts();
    for (const needle of present) {
      const places = parts.filter((p) => p.bytes.includes(needle.bytes)).map((p) => p.where);
      for (const where of places.length > 0 ? places : [source.where]) found.add(`${needle.name} in ${where}`);
    }
  }
  return [...found].sort();
}

const whole = (where: string, bytes: Buffer): Source => ({ where, bytes, parts: () => [{ where, bytes }] });

/** Which canary values of `values` appear (in any encoding) in the sources. */
function presentValues(sources: readonly Source[], values: readonly string[]): Set<string> {
  const present = new Set<string>();
  for (const value of values) {
    const needles = encodingsOf(value, Buffer.from(value, "utf8"));
    if (sources.some((s) => needles.some((n) => s.bytes.includes(n.bytes)))) present.add(value);
  }
  return present;
}

// ---------------------------------------------------------------------------------------------
// The databases, through mariadb-dump (one row per INSERT line, so a find names its table).

interface DumpResult {
  readonly service: string;
  readonly sources: Source[];
  readonly tables: Set<string>;
}

function dumpDatabase(service: string, url: string): DumpResult {
  const parsed = new URL(url);
  const database = decodeURIComponent(parsed.pathname.slice(1));
  const tool = dumpTool();
  const sources: Source[] = [];
  const tables = new Set<string>();
  for (const mode of ["text", "hex-blob"] as const) {
    const run = spawnSync(
      tool,
      [
        `--host=${parsed.hostname}`,
        `--port=${parsed.port || "3306"}`,
        `--user=${decodeURIComponent(parsed.username || "root")}`,
        ...(parsed.password === "" ? [] : [`--password=${decodeURIComponent(parsed.password)}`]),
        "--single-transaction",
        "--skip-extended-insert",
        "--skip-comments",
        "--default-character-set=utf8mb4",
        ...(mode === "hex-blob" ? ["--hex-blob"] : []),
        database,
      ],
      { maxBuffer: 1024 * 1024 * 1024, timeout: 120_000 },
    );
    if (run.status !== 0) throw new Error(`${tool} of ${service} failed (${run.status}): ${run.stderr.toString()}`);
    const bytes = run.stdout;
    const where = `mariadb-dump ${service} (${mode})`;
    sources.push({
      where,
      bytes,
      parts() {
        const rows: Copy[] = [];
        for (let start = 0; start < bytes.length; ) {
          let end = bytes.indexOf(0x0a, start);
          if (end < 0) end = bytes.length;
          const line = bytes.subarray(start, end);
          const table = /^INSERT INTO `([^`]+)`/.exec(line.subarray(0, 200).toString("latin1"))?.[1];
          rows.push({
            where: table === undefined ? `${where}, outside any row` : `${where} table ${table}`,
            bytes: line,
          });
          start = end + 1;
        }
        return rows;
      },
    });
    for (const match of bytes.toString("latin1").matchAll(/^CREATE TABLE `([^`]+)`/gm)) {
      if (match[1] !== undefined) tables.add(match[1]);
    }
  }
  return { service, sources, tables };
}

// ---------------------------------------------------------------------------------------------
// The topics, through kcat: every topic the broker lists (Kafka's own `__` topics aside), from the
// beginning, keys, values and headers.

interface KafkaRecord {
  readonly topic: string;
  readonly where: string;
  readonly key: Buffer;
  readonly value: Buffer;
}

interface TopicsResult {
  readonly sources: Source[];
  readonly topics: string[];
  readonly records: KafkaRecord[];
}

function listTopics(brokers: string): string[] {
  const listed = spawnSync("kcat", ["-b", brokers, "-L", "-J"], { encoding: "utf8", timeout: 60_000 });
  if (listed.status !== 0) throw new Error(`kcat -L failed: ${listed.stderr}`);
  const metadata = JSON.parse(listed.stdout) as { topics: Array<{ topic: string }> };
  return metadata.topics.map((t) => t.topic).filter((t) => !t.startsWith("__"));
}

function readTopics(brokers: string): TopicsResult {
  const topics = listTopics(brokers);
  const sources: Source[] = [];
  const records: KafkaRecord[] = [];
  const read: string[] = [];
  for (const topic of topics) {
    const run = spawnSync(
      "kcat",
      ["-b", brokers, "-C", "-e", "-q", "-o", "beginning", "-t", topic, "-f", "%p %o %K %S\n%k%s%h\n"],
      { maxBuffer: 1024 * 1024 * 1024, timeout: 180_000 },
    );
    if (run.status !== 0) {
      // Another suite on the shared test broker may have deleted its own topic since the listing.
      if (!listTopics(brokers).includes(topic)) continue;
      throw new Error(`kcat -C -t ${topic} failed: ${run.stderr.toString()}`);
    }
    const bytes = run.stdout;
    const parsed = parseKcat(topic, bytes);
    records.push(...parsed);
    read.push(topic);
    sources.push({
      where: `kafka ${topic}`,
      bytes,
      parts: () => parsed.map((r) => ({ where: r.where, bytes: Buffer.concat([r.key, r.value]) })),
    });
  }
  return { sources, topics: read, records };
}

/** Records printed with `%p %o %K %S\n%k%s%h\n`: lengths first, so binary keys and values split exactly. */
function parseKcat(topic: string, bytes: Buffer): KafkaRecord[] {
  const records: KafkaRecord[] = [];
  let at = 0;
  while (at < bytes.length) {
    const lineEnd = bytes.indexOf(0x0a, at);
    if (lineEnd < 0) break;
    const [partition, offset, keyLength, valueLength] = bytes.toString("latin1", at, lineEnd).split(" ").map(Number);
    at = lineEnd + 1;
    const key = bytes.subarray(at, at + Math.max(keyLength ?? 0, 0));
    at += key.length;
    const value = bytes.subarray(at, at + Math.max(valueLength ?? 0, 0));
    at += value.length;
    const headersEnd = bytes.indexOf(0x0a, at);
    at = headersEnd < 0 ? bytes.length : headersEnd + 1;
    records.push({ topic, where: `kafka ${topic}[${partition}]@${offset}`, key, value });
  }
  return records;
}

// ---------------------------------------------------------------------------------------------
// Principals and calls.

const WORKSPACE = "/srv/erasure/x";
const OWNER = "u-erasure";
const tokens = {
  owner: testToken("erasure-owner"),
  peer: testToken("erasure-peer"),
  subscriber: testToken("erasure-subscriber"),
  operator: testToken("erasure-operator"),
};
const principals: TestPrincipal[] = [
  {
    name: "erasure-owner",
    roles: ["harness"],
    scope: "team-erasure",
    owners: ["*"],
    workspaces: ["/srv/erasure/"],
    tokens: [tokens.owner],
  },
  { name: "prompt-assembly", roles: ["peer"], tokens: [tokens.peer] },
  { name: "erasure-subscriber", roles: ["subscriber"], tokens: [tokens.subscriber] },
  { name: "erasure-operator", roles: ["operator"], tokens: [tokens.operator] },
];

type Who = keyof typeof tokens | "local";
const CALL_DEADLINE_MS = 20_000;
const as = (who: Who): UnaryCallOptions =>
  who === "local"
    ? { deadlineMs: CALL_DEADLINE_MS }
    : { deadlineMs: CALL_DEADLINE_MS, metadata: bearerMetadata(tokens[who]) };

/**
 * The clients a family needs (a turn's, with its cache-monitor); the Kafka stack and the embedded
 * system both provide them.
 */
interface System extends TurnClients {
  readonly monitor: CacheMonitorClient;
  readonly owner: Who;
}

const text = (value: string): ContentPart => ({ part: { $case: "text", value: { text: value } } });
const image = (url: string): ContentPart => ({ part: { $case: "image", value: { mediaType: "image/png", url } } });

function buildRequestOf(sessionId: string, minSeq: number): BuildRequestRequest {
  return {
    sessionId,
    minSeq,
    sections: [
      { key: "persona", text: "persona text" },
      { key: "tool-guide", text: "tool guide" },
    ],
    tools: [{ name: "read_file", description: "reads a file", inputSchemaJson: '{"type":"object"}' }],
    wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
    model: "claude-test",
    workspace: WORKSPACE,
    rulesSource: { $case: "rulesContent", value: { text: "# Rules\n- keep it short\n" } },
    embed: false,
    locale: "",
  };
}

/**
 * Writes one family: the parent with every kind of content, built and priced, compacted with a
 * summary naming a personal term (scrubbed), built and priced again; then its continuation, which
 * inherits the summary, with content of its own, built and priced.
 */
async function writeFamily(
  system: System,
  run: string,
  family: Family,
  clockMs: () => number,
): Promise<{ ids: Record<string, string>; lastSeq: Record<string, number> }> {
  const ids: Record<string, string> = {};
  const lastSeq: Record<string, number> = {};
  const who = as(system.owner);

  const buildAndPrice = async (label: Label) => {
    const sessionId = ids[label] ?? "";
    const built = await callUnary(
      system.assembly(),
      system.assembly().buildRequest,
      buildRequestOf(sessionId, lastSeq[label] ?? 0),
      who,
    );
    // Priced once cache-monitor holds the build's fingerprints, so its rows of the session are all there.
    await priceBuild(system, sessionId, built.requestId, claudeTestUsage(0, clockMs()), { call: who });
  };

  const writeMessages = async (label: Label) => {
    const sessionId = ids[label] ?? "";
    const c = (field: Field) => canary(run, label, field);
    const save = async (role: Role, content: ContentPart[], thinkingText = "") => {
      const saved = await callUnary(
        system.sessions,
        system.sessions.saveMessage,
        { sessionId, role, content, thinkingText },
        who,
      );
      lastSeq[label] = saved.seq;
      return saved.messageId;
    };
    const callId = `call-${label}`;
    await save(Role.ROLE_USER, [
      text(`请看这张图：${c("text")}`),
      image(`https://images.example/${c("imageUrl")}.png`),
      image(`data:image/png;base64,${Buffer.from(c("imageData"), "utf8").toString("base64")}`),
    ]);
    await save(
      Role.ROLE_ASSISTANT,
      [
        {
          part: {
            $case: "toolCall",
            value: { callId, name: "read_file", argumentsJson: JSON.stringify({ path: c("toolArgs") }) },
          },
        },
      ],
      `先读文件 ${c("thinking")}`,
    );
    await save(Role.ROLE_TOOL, [
      { part: { $case: "toolResult", value: { callId, text: c("toolResult"), isError: false } } },
    ]);
    const answered = await save(Role.ROLE_ASSISTANT, [text("好的，读完了。")]);
    await save(Role.ROLE_USER, [text("继续。")]);
    return answered;
  };

  const parent: Label = family;
  const child: Label = `${family}C`;
  ids[parent] = `${run}-${parent}`;
  ids[child] = `${run}-${child}`;

  const created = await callUnary(
    system.sessions,
    system.sessions.createSession,
    mainSessionRequest(ids[parent] ?? "", WORKSPACE, {
      owner: OWNER,
      personalTerms: [canary(run, parent, "sessionTerm")],
    }),
    who,
  );
  lastSeq[parent] = created.seq;
  const boundary = await writeMessages(parent);
  await buildAndPrice(parent);
  const compacted = await callUnary(
    system.sessions,
    system.sessions.commitCompaction,
    {
      sessionId: ids[parent] ?? "",
      expectedGeneration: 0,
      boundaryMessageId: boundary,
      summary: `用户在排查 ${canary(run, parent, "summary")} 的问题，联系人 ${canary(run, parent, "compactionTerm")}。`,
      personalTerms: [canary(run, parent, "compactionTerm")],
    },
    who,
  );
  lastSeq[parent] = compacted.seq;
  await buildAndPrice(parent);

  const continued = await callUnary(
    system.sessions,
    system.sessions.createSession,
    mainSessionRequest(ids[child] ?? "", WORKSPACE, {
      owner: OWNER,
      continuedFromSessionId: ids[parent] ?? "",
      personalTerms: [canary(run, child, "sessionTerm")],
    }),
    who,
  );
  lastSeq[child] = continued.seq;
  // The continuation holds the parent's summary: the copy erasing the continuation must remove.
  expect(continued.session?.inheritedSummaryFrom, `${child} inherits`).toBe(ids[parent]);
  expect(continued.session?.summary ?? "", `${child} inherits`).toContain(canary(run, parent, "summary"));
  await writeMessages(child);
  await buildAndPrice(child);
  return { ids, lastSeq };
}

/** The canary values a session's stores hold while it lives (its own content, and an inherited summary). */
function contentCanaries(run: string, label: Label): string[] {
  const own = fieldsOf(label)
    .filter((f) => !TERM_FIELDS.includes(f))
    .map((f) => canary(run, label, f));
  return label.endsWith("C") ? [...own, canary(run, label.slice(0, 1) as Family, "summary")] : own;
}

const termCanaries = (run: string, labels: readonly Label[]) =>
  labels.flatMap((label) => TERM_FIELDS.filter((f) => fieldsOf(label).includes(f)).map((f) => canary(run, label, f)));

/** An RPC's answer (its encoding) or its error (code, details, trailers): both are copies a caller sees. */
async function answerOf<T>(where: string, call: Promise<T>, encode: (answer: T) => Uint8Array): Promise<Source> {
  try {
    return whole(`rpc ${where}`, Buffer.from(encode(await call)));
  } catch (caught) {
    const error = caught as ServiceError;
    if (typeof error.code !== "number") throw caught;
    return whole(
      `rpc ${where} (error)`,
      Buffer.from(`${error.code} ${error.details ?? ""} ${JSON.stringify(error.metadata?.getMap() ?? {})}`),
    );
  }
}

const messageTexts = (response: ListMessagesResponse) => JSON.stringify(ListMessagesResponse.toJSON(response));

/** The session events among the records (the topic and its DLQ), decoded, for the given session ids. */
function sessionEventsOf(records: readonly KafkaRecord[], sessionIds: ReadonlySet<string>) {
  const topics = new Set<string>([Topics.sessionEvents, dlqTopic(Topics.sessionEvents)]);
  return records
    .filter((r) => topics.has(r.topic) && sessionIds.has(r.key.toString("utf8")))
    .map((r) => ({ where: r.where, event: decodeSessionEvent(r.value) }));
}

const sealedOf = (event: SessionEvent) => {
  const payload = event.payload;
  switch (payload?.$case) {
    case "sessionCreated":
    case "messageSaved":
    case "compactionCommitted":
      return payload.value.sealed;
    default:
      return undefined;
  }
};

/** Plaintext content an event carries outside `sealed` (schema 1 fields): "" when none. */
function plaintextOf(event: SessionEvent): string {
  const payload = event.payload;
  switch (payload?.$case) {
    case "sessionCreated":
      return payload.value.inheritedSummary;
    case "messageSaved":
      return payload.value.content.length === 0 ? "" : JSON.stringify(payload.value.content);
    case "compactionCommitted":
      return payload.value.summary;
    default:
      return "";
  }
}

const _sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Over real Kafka and MariaDB.

// The retention the stack's session-events runs with, and when each family is written: E at T0,
// D and L at T_MID (E idle 0.7 R then), the clock then moved to T_END (E idle 1.2 R: expired; L
// idle 0.5 R: kept). T_MID and T_END fall on the same day in Asia/Shanghai, so the live family's
// second build announces no new date and must match its first byte for byte.
const RETENTION_DAYS = 1;
const RETENTION_MS = RETENTION_DAYS * 24 * 3600 * 1000;
const T_MID = Date.UTC(2026, 9, 14, 16, 5, 0); // 2026-10-15 00:05 in Asia/Shanghai
const T0 = T_MID - Math.round(0.7 * RETENTION_MS);
const T_END = T_MID + Math.round(0.5 * RETENTION_MS);

describe("erasure reaches every copy (real Kafka and MariaDB)", () => {
  const run = `er${Date.now().toString(36)}${randomBytes(2).toString("hex")}`;
  let tools = { ready: false, why: "the fixture did not run" };
  let clock = T0;
  let fixture: PrincipalsFixture | undefined;
  let stack: Stack | undefined;
  let keys: DataKeyClient | undefined;
  const databases: Record<string, ServiceDatabase> = {};
  const ids = {} as Record<Label, string>;
  const lastSeq = {} as Record<Label, number>;
  const erased: readonly Label[] = ["D", "DC", "E", "EC"];
  const live: readonly Label[] = ["L", "LC"];
  const all: readonly Label[] = [...erased, ...live];
  /** The erased sessions' keys as they were before the erasure (what an attacker would look for). */
  const keysBefore = new Map<Label, DataKey>();
  const bodiesBefore = new Map<Label, string>();
  let before: { dumps: DumpResult[]; topics: TopicsResult } | undefined;
  let after:
    | { dumps: DumpResult[]; topics: TopicsResult; answers: Source[]; bodies: ReadonlyMap<Label, string> }
    | undefined;

  const system = (): System => {
    if (stack === undefined) throw new Error("no stack");
    const s = stack;
    if (s.monitor === undefined) throw new Error("the stack runs no cache-monitor");
    return { sessions: s.sessions, assembly: () => s.assembly(), monitor: s.monitor, owner: "owner" };
  };

  const settled = (timeoutMs = 60_000) => settledDatabaseState(databases, { timeoutMs, pollMs: 300 });

  const collect = () => ({
    dumps: (["session-events", "rules-snapshot", "prompt-assembly", "cache-monitor"] as const).map((service) =>
      dumpDatabase(service, stack?.databaseUrl(service) ?? ""),
    ),
    topics: readTopics(testKafkaBrokers.join(",")),
  });
  const storeSources = (copies: { dumps: DumpResult[]; topics: TopicsResult }) => [
    ...copies.dumps.flatMap((d) => d.sources),
    ...copies.topics.sources,
  ];

  const buildBody = async (label: Label) => {
    const s = system();
    const built = await callUnary(
      s.assembly(),
      s.assembly().buildRequest,
      buildRequestOf(ids[label], lastSeq[label]),
      as("owner"),
    );
    return built.bodyJson;
  };

  beforeAll(async () => {
    tools = installErasureTools();
    if (!tools.ready) return;
    fixture = writePrincipalsFile(principals);
    stack = await startStack({
      store: "mariadb",
      transport: "kafka",
      cacheMonitor: true,
      now: () => clock,
      auth: { principalsFile: fixture.path, peerToken: tokens.peer, reloadMs: 200 },
      // A sweep every 200 ms of real time; what is idle is judged on the stack's clock.
      serviceEnv: {
        "session-events": { SESSION_RETENTION_DAYS: String(RETENTION_DAYS), SESSION_RETENTION_SWEEP_MS: "200" },
      },
    });
    for (const service of ["session-events", "rules-snapshot", "prompt-assembly", "cache-monitor"] as const) {
      const url = stack.databaseUrl(service);
      databases[service] = { name: decodeURIComponent(new URL(url).pathname.slice(1)), db: createDatabase(url) };
    }
    keys = createDataKeyClient({ sessionEvents: stack.addresses["session-events"], bearerToken: tokens.subscriber });
    const s = stack;
    const write = async (family: Family) => {
      const written = await writeFamily(system(), run, family, () => clock);
      Object.assign(ids, written.ids);
      Object.assign(lastSeq, written.lastSeq);
    };
    // E first, at T0; D and L at T_MID.
    await write("E");
    clock = T_MID;
    await write("D");
    await write("L");
    await settled();

    // Before any erasure: every session's key, the live family's bodies, and the stores as they are.
    for (const key of await keys.getDataKeys(all.map((label) => ids[label]))) {
      const label = all.find((l) => ids[l] === key.sessionId);
      if (label !== undefined && erased.includes(label)) keysBefore.set(label, key);
    }
    for (const label of live) bodiesBefore.set(label, await buildBody(label));
    await settled();
    before = collect();

    // The erasures: D's family deleted by its owner; E's expires once the clock passes its retention.
    for (const label of ["D", "DC"] as const) {
      await callUnary(s.sessions, s.sessions.deleteSession, { sessionId: ids[label] }, as("owner"));
    }
    clock = T_END;
    const client = keys;
    await eventually(async () => (await client.getDataKeys([ids.E, ids.EC])).every((key) => key.erased), {
      what: "the retention sweep to erase E and EC",
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    const bodiesAfter = new Map<Label, string>();
    for (const label of live) bodiesAfter.set(label, await buildBody(label));
    await settled();

    const answers: Source[] = [];
    for (const label of erased) {
      const sessionId = ids[label];
      answers.push(
        await answerOf(
          `ReadEvents ${label} as owner`,
          callUnary(s.sessions, s.sessions.readEvents, { sessionId, afterSeq: 0, limit: 1000 }, as("owner")),
          (r) => ReadEventsResponse.encode(r).finish(),
        ),
        await answerOf(
          `ReadEvents ${label} as peer`,
          callUnary(s.sessions, s.sessions.readEvents, { sessionId, afterSeq: 0, limit: 1000 }, as("peer")),
          (r) => ReadEventsResponse.encode(r).finish(),
        ),
        await answerOf(
          `GetSession ${label}`,
          callUnary(s.sessions, s.sessions.getSession, { sessionId }, as("owner")),
          (r) => Session.encode(r).finish(),
        ),
        await answerOf(
          `ListMessages ${label}`,
          callUnary(s.sessions, s.sessions.listMessages, { sessionId, includeDeleted: true }, as("owner")),
          (r) => ListMessagesResponse.encode(r).finish(),
        ),
        await answerOf(`rules Get ${label}`, callUnary(s.rules, s.rules.get, { sessionId }, as("operator")), (r) =>
          GetResponse.encode(r).finish(),
        ),
      );
    }
    after = { ...collect(), answers, bodies: bodiesAfter };
  }, 600_000);

  afterAll(async () => {
    keys?.close();
    for (const database of Object.values(databases)) await database.db.destroy();
    await stack?.stop();
    fixture?.remove();
  });

  it("reads what it claims to: every service database with its outbox, every topic with its DLQ", ({ skip }) => {
    if (!tools.ready) skip(tools.why);
    const copies = after;
    if (copies === undefined) throw new Error("the fixture did not run");
    const tables = Object.fromEntries(copies.dumps.map((d) => [d.service, d.tables]));
    // session-events' event table is its outbox; the others relay through outbox_message.
    expect(tables["session-events"]?.has("session_event")).toBe(true);
    expect(tables["session-events"]?.has("session_data_key")).toBe(true);
    for (const service of ["rules-snapshot", "prompt-assembly", "cache-monitor"]) {
      expect(tables[service]?.has("outbox_message"), service).toBe(true);
    }
    for (const topic of Object.values(Topics)) {
      expect(copies.topics.topics, topic).toContain(topic);
      expect(copies.topics.topics, dlqTopic(topic)).toContain(dlqTopic(topic));
    }
  });

  it("control: before the erasure, the same search finds every erased canary and the erased keys", ({ skip }) => {
    if (!tools.ready) skip(tools.why);
    if (before === undefined) throw new Error("the fixture did not run");
    const sources = storeSources(before);
    // The topic holds content only sealed: opened with the keys of that moment, it is found there too.
    const opened = sessionEventsOf(before.topics.records, new Set(erased.map((l) => ids[l]))).flatMap(
      ({ where, event }) => {
        const label = erased.find((l) => ids[l] === event.sessionId);
        const key = label === undefined ? undefined : keysBefore.get(label);
        return key === undefined
          ? []
          : [whole(`${where} opened`, Buffer.from(SessionEvent.encode(openSealedEvent(event, key)).finish()))];
      },
    );
    const expected = erased.flatMap((label) => contentCanaries(run, label));
    const present = presentValues([...sources, ...opened], expected);
    expect(expected.filter((value) => !present.has(value))).toEqual([]);
    // Both services that keep content held all of it (prompt-assembly all but thinking text, which
    // is never sent to it), so the search after the erasure looks where the copies were.
    const dumps = before.dumps;
    const heldBy = (service: string) => {
      const dump = dumps.find((d) => d.service === service);
      return presentValues(dump?.sources ?? [], expected);
    };
    const inSessionEvents = heldBy("session-events");
    const inAssembly = heldBy("prompt-assembly");
    expect(expected.filter((value) => !inSessionEvents.has(value))).toEqual([]);
    expect(expected.filter((value) => !value.endsWith("-thinking") && !inAssembly.has(value))).toEqual([]);
    for (const label of erased) {
      const key = keysBefore.get(label);
      expect(key?.erased, label).toBe(false);
      expect(key?.key.length, label).toBe(32);
      const hexDump = before.dumps
        .find((d) => d.service === "session-events")
        ?.sources.find((s) => s.where.includes("hex-blob"));
      expect(
        hexDump?.bytes.includes(
          Buffer.from(
            Buffer.from(key?.key ?? [])
              .toString("hex")
              .toUpperCase(),
          ),
        ),
        label,
      ).toBe(true);
    }
  });

  it("leaves no erased canary, in any encoding, in any dump, topic, DLQ, outbox or RPC answer", ({ skip }) => {
    if (!tools.ready) skip(tools.why);
    if (after === undefined) throw new Error("the fixture did not run");
    const needles = canaryNeedles(erased.flatMap((label) => contentCanaries(run, label)));
    expect(findNeedles([...storeSources(after), ...after.answers], needles)).toEqual([]);
  });

  it("destroys the erased sessions' keys: GetDataKeys says erased, and no key byte is left in any store", async ({
    skip,
  }) => {
    if (!tools.ready) skip(tools.why);
    if (after === undefined || keys === undefined) throw new Error("the fixture did not run");
    const now = await keys.getDataKeys(erased.map((l) => ids[l]));
    expect(now.map((k) => ({ erased: k.erased, bytes: k.key.length }))).toEqual(
      erased.map(() => ({ erased: true, bytes: 0 })),
    );
    const needles = erased.flatMap((label) => {
      const key = keysBefore.get(label);
      return key === undefined ? [] : encodingsOf(`key of ${label}`, Buffer.from(key.key));
    });
    expect(needles.length).toBeGreaterThan(0);
    expect(findNeedles([...storeSources(after), ...after.answers], needles)).toEqual([]);
  });

  it("leaves the erased sessions' events on the topic and its DLQ sealed, under the destroyed key only", ({ skip }) => {
    if (!tools.ready) skip(tools.why);
    if (after === undefined) throw new Error("the fixture did not run");
    const events = sessionEventsOf(after.topics.records, new Set(erased.map((l) => ids[l])));
    const problems: string[] = [];
    const opened: Source[] = [];
    for (const { where, event } of events) {
      const label = erased.find((l) => ids[l] === event.sessionId);
      const key = label === undefined ? undefined : keysBefore.get(label);
      if (plaintextOf(event) !== "") problems.push(`${where}: ${event.type} carries plaintext content`);
      const sealed = sealedOf(event);
      if (sealed === undefined) continue;
      if (key === undefined || sealed.keyId !== key.keyId) {
        problems.push(`${where}: sealed under ${sealed.keyId}, not the destroyed key`);
        continue;
      }
      opened.push(whole(`${where} opened`, Buffer.from(SessionEvent.encode(openSealedEvent(event, key)).finish())));
    }
    expect(problems).toEqual([]);
    // The copies are still there, whole: whoever held the destroyed key would read every canary the
    // events carried (thinking text never travels). That key is what no store has any more (above).
    const carried = erased.flatMap((label) => contentCanaries(run, label)).filter((v) => !v.endsWith("-thinking"));
    const readable = presentValues(opened, carried);
    expect(carried.filter((value) => !readable.has(value))).toEqual([]);
  });

  it("never stores a personal term, sealed or not, in any family", ({ skip }) => {
    if (!tools.ready) skip(tools.why);
    if (before === undefined || after === undefined || keys === undefined) throw new Error("the fixture did not run");
    const needles = canaryNeedles(termCanaries(run, all));
    // The sealed content of every event, opened with the keys of the moment (live keys still work).
    const opened = (records: readonly KafkaRecord[]) =>
      sessionEventsOf(records, new Set(all.map((l) => ids[l]))).flatMap(({ where, event }) => {
        const label = all.find((l) => ids[l] === event.sessionId);
        const key = label === undefined ? undefined : keysBefore.get(label);
        if (key === undefined || sealedOf(event)?.keyId !== key.keyId) return [];
        return [whole(`${where} opened`, Buffer.from(SessionEvent.encode(openSealedEvent(event, key)).finish()))];
      });
    expect(
      findNeedles(
        [...storeSources(before), ...opened(before.topics.records), ...storeSources(after), ...after.answers],
        needles,
      ),
    ).toEqual([]);
  });

  it("keeps the live family whole: readable by its owner, opened with its key, its body byte-identical", async ({
    skip,
  }) => {
    if (!tools.ready) skip(tools.why);
    if (after === undefined || keys === undefined || stack === undefined) throw new Error("the fixture did not run");
    const s = stack;
    for (const label of live) {
      const own = contentCanaries(run, label).filter((v) => !v.endsWith("-thinking"));
      const listed = await callUnary(
        s.sessions,
        s.sessions.listMessages,
        { sessionId: ids[label], includeDeleted: true },
        as("owner"),
      );
      const session = await callUnary(s.sessions, s.sessions.getSession, { sessionId: ids[label] }, as("owner"));
      const seen = `${messageTexts(listed)}\n${session.summary}`;
      expect(
        own.filter((value) => !seen.includes(value) && !seen.includes(Buffer.from(value).toString("base64"))),
        label,
      ).toEqual([]);
      expect(after.bodies.get(label), `${label} body`).toBe(bodiesBefore.get(label));
      // Both bodies carry the family's summary (the continuation's inherited), so the builds read
      // the sealed content, and their equality is about content.
      expect(bodiesBefore.get(label) ?? "", `${label} body carries its content`).toContain(canary(run, "L", "summary"));
    }
    // The topic's copies open with the keys GetDataKeys gives a subscriber now.
    const events = sessionEventsOf(after.topics.records, new Set(live.map((l) => ids[l]))).map((e) => e.event);
    const opened = JSON.stringify((await keys.openEvents(events)).map((e) => SessionEvent.toJSON(e)));
    const expected = live.flatMap((label) => contentCanaries(run, label)).filter((v) => !v.endsWith("-thinking"));
    expect(
      expected.filter((value) => !opened.includes(value) && !opened.includes(Buffer.from(value).toString("base64"))),
    ).toEqual([]);
    // And the after-search does see content that exists: the live canaries (thinking text included) are in the dumps.
    const liveValues = live.flatMap((label) => contentCanaries(run, label));
    const present = presentValues(
      after.dumps.flatMap((d) => d.sources),
      liveValues,
    );
    expect(liveValues.filter((value) => !present.has(value))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// `make run`'s embedded mode: SQLite files under a temp data dir, read as raw bytes.

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

const fileSources = (dir: string): Source[] =>
  filesUnder(dir).map((path) => whole(`file ${path.slice(dir.length + 1)}`, readFileSync(path)));

describe("erasure in make run's embedded mode (SQLite files)", () => {
  const run = `em${Date.now().toString(36)}${randomBytes(2).toString("hex")}`;
  let embedded: EmbeddedSystem | undefined;
  let clients:
    | { sessions: SessionEventsClient; assembly: PromptAssemblyClient; monitor: CacheMonitorClient }
    | undefined;
  const ids = {} as Record<Label, string>;
  const erased: readonly Label[] = ["D", "DC"];
  const live: readonly Label[] = ["L", "LC"];
  let deleted = false;

  beforeAll(async () => {
    embedded = await startEmbeddedSystem();
    const insecure = credentials.createInsecure();
    clients = {
      sessions: new SessionEventsClient(embedded.addresses.sessionEvents, insecure),
      assembly: new PromptAssemblyClient(embedded.addresses.promptAssembly, insecure),
      monitor: new CacheMonitorClient(embedded.addresses.cacheMonitor, insecure),
    };
    const c = clients;
    const system: System = { sessions: c.sessions, assembly: () => c.assembly, monitor: c.monitor, owner: "local" };
    for (const family of ["D", "L"] as const) {
      Object.assign(ids, (await writeFamily(system, run, family, Date.now)).ids);
    }
  }, 300_000);

  afterAll(async () => {
    clients?.sessions.close();
    clients?.assembly.close();
    clients?.monitor.close();
    if (embedded !== undefined) {
      await embedded.stop("SIGINT");
      rmSync(embedded.dataDir, { recursive: true, force: true });
    }
  });

  it("leaves no byte of a deleted session's content in any .sqlite or -wal file, and the live one whole", async () => {
    if (embedded === undefined || clients === undefined) throw new Error("the fixture did not run");
    const dir = embedded.dataDir;
    const c = clients;
    const erasedValues = erased.flatMap((label) => contentCanaries(run, label));
    // Control: the files hold the content before the deletion (the search reads what is there).
    const present = presentValues(fileSources(dir), erasedValues);
    expect(erasedValues.filter((value) => !present.has(value))).toEqual([]);

    for (const label of erased) {
      await callUnary(c.sessions, c.sessions.deleteSession, { sessionId: ids[label] }, as("local"));
    }
    deleted = true;
    // Consumers apply SessionDeleted in their own time; the copies must be gone once they have.
    let leaks: string[] = [];
    try {
      await eventually(
        () => {
          leaks = findNeedles(fileSources(dir), canaryNeedles(erasedValues));
          return leaks.length === 0;
        },
        { what: "the deleted sessions' content to leave the files", timeoutMs: 30_000, intervalMs: 500 },
      );
    } catch {
      // Reported below, with where each copy sits.
    }
    expect(leaks).toEqual([]);
    expect(findNeedles(fileSources(dir), canaryNeedles(termCanaries(run, [...erased, ...live])))).toEqual([]);

    for (const label of live) {
      const listed = await callUnary(
        c.sessions,
        c.sessions.listMessages,
        { sessionId: ids[label], includeDeleted: true },
        as("local"),
      );
      expect(messageTexts(listed), label).toContain(canary(run, label, "toolResult"));
    }
    const liveValues = live.flatMap((label) => contentCanaries(run, label));
    const still = presentValues(fileSources(dir), liveValues);
    expect(liveValues.filter((value) => !still.has(value))).toEqual([]);
  });

  it("leaves none either in the files a clean stop leaves on disk (the WAL checkpointed into the database)", async () => {
    if (embedded === undefined || !deleted) throw new Error("the deletion above did not run");
    const { code } = await embedded.stop("SIGINT");
    expect(code).toBe(0);
    const erasedValues = erased.flatMap((label) => contentCanaries(run, label));
    expect(findNeedles(fileSources(embedded.dataDir), canaryNeedles(erasedValues))).toEqual([]);
    // The live content is on disk still: the search reads the files as they are.
    const liveValues = live.flatMap((label) => contentCanaries(run, label));
    const still = presentValues(fileSources(embedded.dataDir), liveValues);
    expect(liveValues.filter((value) => !still.has(value))).toEqual([]);
  });
});
