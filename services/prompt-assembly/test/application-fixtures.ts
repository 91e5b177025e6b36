import { type DataKey, newDataKey, sealFields, sha256Hex } from "@prefix-guard/events";
// Test doubles and helpers for the application tests: an in-memory session-events log (the writer
// side and ReadEvents), a rules-snapshot fake that freezes per session like seed 001, a fixed
// clock, a recording logger and database openers for MariaDB and SQLite.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { createTestDatabase } from "@prefix-guard/db/testing";
import { promptAssemblyMigrations } from "@prefix-guard/migrations/prompt-assembly";
import {
  type BuildRequestRequest,
  WireFormat as ProtoWireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import {
  Decision,
  type ResolveRequest,
  type ResolveResponse,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { FingerprintStore } from "../src/adapters/mysql/fingerprint-store";
import type {
  BuilderLogger,
  PromptBuilderOptions,
  StageObserver,
} from "../src/application/build-request/build-request";
import { ANCHOR_TO_FIRST_USER_MESSAGE } from "../src/application/build-request/dates";
import { type RulesResolver, snapshotRulesSource } from "../src/application/build-request/rules";
import { contentToProto } from "../src/application/content-mapping";
import type { DataKeySource, SessionKeyState } from "../src/application/sealed-events";
import type { SessionEventsReader } from "../src/application/session-projection";
import { type AssemblyPorts, assemblyCore as wireAssemblyCore } from "../src/assembly-parts";
import type { ContentPart } from "../src/domain/model";

export const sha256 = sha256Hex;

/** Instant of a wall-clock time in Asia/Shanghai (UTC+8, no DST). */
export function shanghai(date: string, time: string): number {
  return Date.parse(`${date}T${time}:00+08:00`);
}

// The writer's date computation, done independently of the code under test (sv-SE formats ISO dates).
function writerLocalDate(ms: number, timeZone: string): string {
  return new Intl.DateTimeFormat("sv-SE", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" }).format(
    new Date(ms),
  );
}

const ROLES = { user: Role.ROLE_USER, assistant: Role.ROLE_ASSISTANT, tool: Role.ROLE_TOOL, system: Role.ROLE_SYSTEM };

export class FixedClock {
  constructor(public ms: number) {}
  readonly now = (): number => this.ms;
}

/**
 * session-events as seen from prompt-assembly: every write appends an event to the session's log
 * and, unless told otherwise, delivers it to the projection (the Kafka consumer path). ReadEvents
 * serves the log, so undelivered events can only arrive through a catch-up.
 */
export class FakeSessionEvents implements SessionEventsReader, DataKeySource {
  readCalls = 0;
  /** GetDataKeys calls, each with the ids asked for. */
  readonly keyCalls: string[][] = [];
  /** Sessions' live data keys (sealing logs only); DeleteSession destroys a session's key. */
  readonly dataKeys = new Map<string, DataKey>();
  readonly erasedKeys = new Set<string>();
  /** afterSeq of every ReadEvents call, in order. */
  readonly readsAfter: number[] = [];
  /** When set, ReadEvents fails with it (session-events down). */
  failReadsWith: Error | null = null;
  /** The consumer path: what service.ts does with a delivered batch (apply, then drop ended views). */
  autoDeliver: { applySessionEvent(event: SessionEvent): Promise<unknown> } | null = null;
  private readonly logs = new Map<string, SessionEvent[]>();
  private readonly zones = new Map<string, string>();
  private eventCounter = 0;

  /**
   * `seal`: writes schema 2 events, as session-events does from schema 2 on: a data key per session
   * and the content only in `sealed`.
   */
  constructor(private readonly options: { seal?: boolean } = {}) {}

  async getDataKeys(sessionIds: readonly string[]): Promise<ReadonlyMap<string, SessionKeyState>> {
    this.keyCalls.push([...sessionIds]);
    const states = new Map<string, SessionKeyState>();
    for (const sessionId of sessionIds) {
      const key = this.dataKeys.get(sessionId);
      if (key !== undefined) states.set(sessionId, { state: "live", key });
      else states.set(sessionId, { state: this.erasedKeys.has(sessionId) ? "erased" : "unknown" });
    }
    return states;
  }

  events(sessionId: string): SessionEvent[] {
    return [...(this.logs.get(sessionId) ?? [])];
  }

  lastSeq(sessionId: string): number {
    return this.logs.get(sessionId)?.length ?? 0;
  }

  async readEvents(sessionId: string, afterSeq: number, limit: number) {
    this.readCalls += 1;
    this.readsAfter.push(afterSeq);
    if (this.failReadsWith !== null) throw this.failReadsWith;
    const log = this.logs.get(sessionId) ?? [];
    return { events: log.filter((event) => event.seq > afterSeq).slice(0, limit), lastSeq: log.length };
  }

  async createSession(
    sessionId: string,
    options: {
      atMs: number;
      timezone?: string;
      kind?: SessionKind;
      inheritedSummary?: string;
      deliver?: boolean;
      locale?: string;
      workspace?: string;
    },
  ): Promise<SessionEvent> {
    const timezone = options.timezone ?? "Asia/Shanghai";
    this.zones.set(sessionId, timezone);
    return this.append(sessionId, options.atMs, options.deliver, {
      $case: "sessionCreated",
      value: {
        owner: "owner-1",
        workspace: options.workspace ?? "/ws/oc_4fc3",
        timezone,
        kind: options.kind ?? SessionKind.SESSION_KIND_MAIN,
        parentSessionId: "",
        inheritedSummaryFrom: options.inheritedSummary === undefined ? "" : "previous-session",
        inheritedSummary: options.inheritedSummary ?? "",
        locale: options.locale ?? "",
        scope: "",
      },
    });
  }

  async saveMessage(
    sessionId: string,
    options: {
      atMs: number;
      role: keyof typeof ROLES;
      content: string | readonly ContentPart[];
      deliver?: boolean;
    },
  ): Promise<SessionEvent> {
    const zone = this.zones.get(sessionId) ?? "Asia/Shanghai";
    const content: readonly ContentPart[] =
      typeof options.content === "string" ? [{ type: "text", text: options.content }] : options.content;
    return this.append(sessionId, options.atMs, options.deliver, {
      $case: "messageSaved",
      value: {
        messageId: `${sessionId}:m${this.lastSeq(sessionId) + 1}`,
        role: ROLES[options.role],
        content: contentToProto(content),
        thinkingChars: 0,
        localDate: writerLocalDate(options.atMs, zone),
      },
    });
  }

  async deleteMessage(sessionId: string, messageId: string, atMs: number): Promise<SessionEvent> {
    return this.append(sessionId, atMs, undefined, { $case: "messageDeleted", value: { messageId } });
  }

  async commitCompaction(
    sessionId: string,
    options: { atMs: number; generation: number; boundaryMessageId: string; summary: string },
  ): Promise<SessionEvent> {
    return this.append(sessionId, options.atMs, undefined, {
      $case: "compactionCommitted",
      value: { generation: options.generation, boundaryMessageId: options.boundaryMessageId, summary: options.summary },
    });
  }

  async deleteSession(sessionId: string, atMs: number): Promise<SessionEvent> {
    return this.append(sessionId, atMs, undefined, { $case: "sessionDeleted", value: {} });
  }

  async promoteSideTask(sessionId: string, atMs: number): Promise<SessionEvent> {
    return this.append(sessionId, atMs, undefined, { $case: "sideTaskPromoted", value: { parentSessionId: "parent" } });
  }

  private async append(
    sessionId: string,
    atMs: number,
    deliver: boolean | undefined,
    written: NonNullable<SessionEvent["payload"]>,
  ): Promise<SessionEvent> {
    const log = this.logs.get(sessionId) ?? [];
    this.eventCounter += 1;
    if (this.options.seal === true && written.$case === "sessionCreated") {
      this.dataKeys.set(sessionId, newDataKey());
      this.erasedKeys.delete(sessionId);
    }
    const payload = this.options.seal === true ? this.sealed(sessionId, log.length + 1, written) : written;
    const typeNames: Record<typeof payload.$case, string> = {
      sessionCreated: "SessionCreated",
      messageSaved: "MessageSaved",
      messageDeleted: "MessageDeleted",
      compactionCommitted: "CompactionCommitted",
      sessionDeleted: "SessionDeleted",
      sideTaskPromoted: "SideTaskPromoted",
    };
    const event: SessionEvent = {
      eventId: `evt-${this.eventCounter}`,
      sessionId,
      seq: log.length + 1,
      occurredAtMs: atMs,
      schemaVersion: this.options.seal === true ? 2 : 1,
      type: typeNames[payload.$case],
      payload,
    };
    log.push(event);
    this.logs.set(sessionId, log);
    // DeleteSession erases: the key is destroyed when the event is written.
    if (payload.$case === "sessionDeleted" && this.dataKeys.delete(sessionId)) this.erasedKeys.add(sessionId);
    if (deliver !== false && this.autoDeliver !== null) await this.autoDeliver.applySessionEvent(event);
    return event;
  }

  /** The payload as a schema 2 writer stores it: content fields empty, their values sealed. */
  private sealed(
    sessionId: string,
    seq: number,
    payload: NonNullable<SessionEvent["payload"]>,
  ): NonNullable<SessionEvent["payload"]> {
    const key = this.dataKeys.get(sessionId);
    if (key === undefined) return payload;
    switch (payload.$case) {
      case "sessionCreated": {
        const sealed = sealFields(key, sessionId, seq, { inheritedSummary: payload.value.inheritedSummary });
        return { $case: "sessionCreated", value: { ...payload.value, inheritedSummary: "", sealed } };
      }
      case "messageSaved": {
        const sealed = sealFields(key, sessionId, seq, { content: payload.value.content });
        return { $case: "messageSaved", value: { ...payload.value, content: [], sealed } };
      }
      case "compactionCommitted": {
        const sealed = sealFields(key, sessionId, seq, { summary: payload.value.summary });
        return { $case: "compactionCommitted", value: { ...payload.value, summary: "", sealed } };
      }
      default:
        return payload;
    }
  }
}

export function messageIdOf(event: SessionEvent): string {
  if (event.payload?.$case !== "messageSaved") throw new Error(`event ${event.seq} is not a MessageSaved`);
  return event.payload.value.messageId;
}

export const RULES_HEADING = "## 工作区规则";

/**
 * Seed 001's freeze, per session: the first non-empty read is pinned; later reads keep the pinned
 * text whatever the disk says, unless the caller says the cache is cold (re-pinned from a changed
 * disk); a higher compaction generation than the pin's re-pins from disk.
 */
export class FakeRulesSnapshot implements RulesResolver {
  /** Current AGENTS.md content of the shared workspace. */
  disk = "";
  failWith: Error | null = null;
  readonly calls: { request: ResolveRequest; timeoutMs: number }[] = [];
  private readonly pins = new Map<string, { text: string; generation: number }>();

  async resolve(request: ResolveRequest, timeoutMs: number): Promise<ResolveResponse> {
    this.calls.push({ request, timeoutMs });
    if (this.failWith !== null) throw this.failWith;
    if (request.embed) return this.answer("", Decision.DECISION_SKIPPED_EMBED, 0);
    const pinned = this.pins.get(request.sessionId);
    if (pinned !== undefined && pinned.generation >= request.compactionGeneration) {
      if (request.cacheCold === true && this.disk !== "" && this.disk !== pinned.text) {
        this.pins.set(request.sessionId, { text: this.disk, generation: pinned.generation });
        return this.answer(this.disk, Decision.DECISION_REPINNED_COLD_CACHE, pinned.generation);
      }
      const decision =
        this.disk === pinned.text
          ? Decision.DECISION_RETAINED
          : this.disk === ""
            ? Decision.DECISION_RETAINED_DISK_EMPTY
            : Decision.DECISION_RETAINED_DISK_CHANGED;
      return this.answer(pinned.text, decision, pinned.generation);
    }
    if (this.disk === "") {
      this.pins.delete(request.sessionId);
      return this.answer("", Decision.DECISION_EMPTY_NOT_PINNED, 0);
    }
    this.pins.set(request.sessionId, { text: this.disk, generation: request.compactionGeneration });
    return this.answer(
      this.disk,
      pinned === undefined ? Decision.DECISION_PINNED : Decision.DECISION_REPINNED_STALE_GENERATION,
      request.compactionGeneration,
    );
  }

  private answer(text: string, decision: Decision, generation: number): ResolveResponse {
    return {
      sectionText: text === "" ? "" : `${RULES_HEADING}\n\n${text}`,
      decision,
      rulesHash: text === "" ? "" : sha256(text),
      pinnedGeneration: generation,
      warning: "",
      refreshReason: "",
    };
  }
}

export class RecordingLogger implements BuilderLogger {
  readonly lines: { level: "info" | "warn"; message: string; fields: Record<string, unknown> }[] = [];
  info(fields: Record<string, unknown>, message: string): void {
    this.lines.push({ level: "info", message, fields });
  }
  warn(fields: Record<string, unknown>, message: string): void {
    this.lines.push({ level: "warn", message, fields });
  }
  prefixChangedLines(sessionId: string): string[] {
    return this.lines
      .map((line) => line.message)
      .filter((message) => message.startsWith(`prefix changed session=${sessionId} `));
  }
}

/** The six harness sections of seed 000 §1.1, in order; current-date goes after the 4th. */
export const HARNESS_SECTIONS = [
  { key: "persona", text: "你是 Mao,一个在工作区里干活的编程助手。" },
  { key: "experiences", text: "经验:新增仓库后同步更新 AGENTS.md 的索引表。" },
  { key: "memories", text: "记忆:用户偏好简洁的回答。" },
  { key: "environment", text: "环境:Linux,工作区 /ws/oc_4fc3。" },
  { key: "tool-guide", text: "工具指引:读文件用 read_file,执行命令用 shell。" },
  { key: "skills", text: "技能:dc-pts-exector。" },
];

export const HARNESS_TOOLS = [
  {
    name: "shell",
    description: "Run a shell command",
    inputSchemaJson: '{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}',
  },
  {
    name: "read_file",
    description: "Read a file",
    inputSchemaJson: '{"properties":{"path":{"type":"string"}},"type":"object"}',
  },
];

export function harnessRequest(sessionId: string, overrides: Partial<BuildRequestRequest> = {}): BuildRequestRequest {
  return {
    sessionId,
    minSeq: 0,
    sections: HARNESS_SECTIONS.map((section) => ({ ...section })),
    tools: HARNESS_TOOLS.map((tool) => ({ ...tool })),
    wireFormat: ProtoWireFormat.WIRE_FORMAT_OPENAI_CHAT,
    model: "glm-4.6",
    workspace: "/ws/oc_4fc3",
    rulesSource: { $case: "rulesFile", value: { path: "/ws/oc_4fc3/AGENTS.md" } },
    embed: false,
    locale: "zh-CN",
    ...overrides,
  };
}

/** A migrated database that can be "restarted" (closed and opened again on the same data). */
export interface TestStore {
  readonly label: string;
  db: Database;
  restart(): Promise<Database>;
  close(): Promise<void>;
}

/** The PrefixEvents a session's builds left in the outbox, in enqueue order. */
export async function outboxPrefixEvents(db: Database, sessionId: string): Promise<PrefixEvent[]> {
  const rows = (await db("outbox_message")
    .where({ topic: "prompt.prefix.v1", message_key: sessionId })
    .orderBy("id", "asc")
    .select("payload")) as { payload: Buffer }[];
  return rows.map((row) => PrefixEvent.decode(new Uint8Array(row.payload)));
}

export async function openMariaDbStore(label: string): Promise<TestStore> {
  const test = await createTestDatabase(label);
  const store: TestStore = {
    label: "MariaDB",
    db: createDatabase(test.url, { multipleStatements: true }),
    async restart() {
      await store.db.destroy();
      store.db = createDatabase(test.url, { multipleStatements: true });
      return store.db;
    },
    async close() {
      await store.db.destroy();
      await test.drop();
    },
  };
  await runMigrations(store.db, promptAssemblyMigrations);
  return store;
}

export async function openSqliteStore(label: string): Promise<TestStore> {
  const directory = await mkdtemp(join(tmpdir(), `pa-${label}-`));
  const url = `sqlite:${join(directory, "prompt-assembly.sqlite")}`;
  const store: TestStore = {
    label: "SQLite",
    db: createDatabase(url),
    async restart() {
      await store.db.destroy();
      store.db = createDatabase(url);
      return store.db;
    },
    async close() {
      await store.db.destroy();
      await rm(directory, { recursive: true, force: true });
    },
  };
  await runMigrations(store.db, promptAssemblyMigrations);
  return store;
}

/**
 * prompt-assembly's core as service.ts wires it, over a test database: the projection, the views
 * held in memory, the durable prefix memory and the builder. `ports` replaces a product port.
 */
/** The service's build path (assembly-parts.ts) on a test store, with the tests' defaults. */
export function assemblyCore(deps: {
  db: Database;
  rules: RulesResolver;
  sessions: SessionEventsReader;
  now: () => number;
  logger: BuilderLogger;
  options?: PromptBuilderOptions;
  ports?: Partial<AssemblyPorts>;
  viewCacheBytes?: number;
  observeStage?: StageObserver;
  rulesTimeoutMs?: number;
  /** GetDataKeys: with it, sealed (schema 2) events are opened, as service.ts wires it. */
  keys?: DataKeySource;
}) {
  let eventCounter = 0;
  return wireAssemblyCore({
    db: deps.db,
    sessions: deps.sessions,
    keys: deps.keys ?? null,
    rules:
      deps.ports?.rules ??
      snapshotRulesSource(deps.rules, { timeoutMs: deps.rulesTimeoutMs ?? 2_000, logger: deps.logger }),
    fingerprints: deps.ports?.fingerprints ?? new FingerprintStore(deps.db),
    dates: deps.ports?.dates ?? ANCHOR_TO_FIRST_USER_MESSAGE,
    now: deps.now,
    newEventId: () => `prefix-event-${++eventCounter}`,
    traceHeaders: () => ({}),
    logger: deps.logger,
    viewCacheBytes: deps.viewCacheBytes ?? 64 * 1024 * 1024,
    prefixCacheBytes: 16 * 1024 * 1024,
    builder: {
      ...(deps.options === undefined ? {} : { options: deps.options }),
      ...(deps.observeStage === undefined ? {} : { observeStage: deps.observeStage }),
    },
  });
}

export const STORES: readonly { name: string; open: (label: string) => Promise<TestStore> }[] = [
  { name: "MariaDB", open: openMariaDbStore },
  { name: "SQLite", open: openSqliteStore },
];
