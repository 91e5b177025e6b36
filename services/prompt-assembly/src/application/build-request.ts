// BuildRequest: turns the projected session plus the harness's sections and tools into the exact
// request body for the LLM, and records what its cacheable prefix was made of.
//
// Order of the system prompt: the harness sections as given, `current-date` inserted at
// `currentDatePosition` (5th by default, seed 000 §1.1), `workspace-rules` last (seed 001 §1.2).
// History: buildHistoryWindow → previousUserDateBefore → applyDateChangeNotices → attachSummary
// (see domain/date-anchor.ts for why in that order).
//
// Determinism: the body depends only on the request, the projection (stored timestamps and local
// dates) and the rules snapshot. The clock enters in exactly one place, "today" for a session
// without user messages, and the request id is a hash of the body, so the same state always gives
// the same bytes and the same id.
//
// Benchmark baseline ("naive" policy, bench/src/replay): the seeds' "before", kept only so the
// replay benchmark can measure what the stabilisation buys against the same services. Today's date
// in the system prompt (seed 000 §1.1), AGENTS.md reread and injected every build (seed 001 §1.2),
// and the prefix monitor in process memory, forgotten on restart (seed 001 §1.2). The default
// policy, "stabilised", is the product; nothing in it depends on the naive branch.
//
// Rules-snapshot outage: the build fails with UnavailableError instead of degrading. Dropping the
// section or injecting unpinned text would silently change the prefix of a session whose snapshot
// exists; the harness retries, and rules-snapshot itself degrades (DEGRADED_RAW) when only its
// store is down.

import { enqueueOutboxMessage, traceHeaders } from "@prefix-guard/bus";
import { type Database, retryOnDeadlock, translateDbError } from "@prefix-guard/db";
import {
  FailedPreconditionError,
  InternalError,
  isPrefixGuardError,
  UnavailableError,
  ValidationError,
} from "@prefix-guard/errors";
import { newEventId, Topics } from "@prefix-guard/events";
import { requireBoundedText, requireId } from "@prefix-guard/events/ids";
import type {
  BuildRequestRequest,
  BuildRequestResponse,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import {
  Decision,
  decisionToJSON,
  type ResolveRequest,
  type ResolveResponse,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import type { Knex } from "knex";
import { cacheMinimumTokensFor, parseCacheMinimums } from "../domain/cache-minimums";
import { canonicalJson, parseJsonStrict } from "../domain/canonical-json";
import {
  applyDateChangeNotices,
  CURRENT_DATE_SECTION_KEY,
  firstUserSeq,
  previousUserDateBefore,
  renderCurrentDateSection,
  resolveAnchorDate,
} from "../domain/date-anchor";
import { fingerprintRequest, type PrefixFingerprint, type SectionFingerprint } from "../domain/fingerprint";
import { attachSummary, buildHistoryWindow } from "../domain/history-window";
import type { ChatRequest, Locale, SystemSection, ToolDefinition, WireFormat } from "../domain/model";
import {
  type CauseHints,
  comparePrefix,
  DECISION_REREAD,
  formatPrefixChangedLog,
  type PrefixComparison,
  WORKSPACE_RULES_SECTION_KEY,
} from "../domain/prefix-monitor";
import { estimateTokens } from "../domain/tokens";
import { orderTools } from "../domain/tool-order";
import { wireFormatOfProto, wireFormatPlugin } from "../domain/wire-formats/registry";
import type { ProjectedSessionView, SessionEventsReader, SessionProjection } from "./session-projection";

export type { SessionEventsReader } from "./session-projection";

/**
 * Port over rules-snapshot Resolve. `timeoutMs` is relative: network deadlines are wall-clock time,
 * never the injected `now` (which is the session clock used for dates and may be fixed in tests).
 */
export interface RulesResolver {
  resolve(request: ResolveRequest, timeoutMs: number): Promise<ResolveResponse>;
}

/** The part of a logger the builder uses (pino's Logger satisfies it). */
export interface BuilderLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface PromptBuilderOptions {
  /** How long to wait for the Kafka consumer to reach min_seq before reading events directly. */
  readonly minSeqWaitMs?: number;
  readonly minSeqPollIntervalMs?: number;
  /** Index of the current-date section among the harness sections (0-based; 4 = 5th). */
  readonly currentDatePosition?: number;
  /** Sort tools by name before fingerprinting and serializing (guards against hash-map order). */
  readonly canonicalToolOrder?: boolean;
  /** Model-prefix → minimum cacheable tokens, over the published table (domain/cache-minimums.ts). */
  readonly anthropicCacheMinimums?: Readonly<Record<string, number>>;
  /** Time budget of one Resolve call. */
  readonly rulesTimeoutMs?: number;
  /** "stabilised" (default) is the product; "naive" is the benchmark baseline, the seeds' "before". */
  readonly policy?: AssemblyPolicy;
}

export type AssemblyPolicy = "stabilised" | "naive";

export interface PromptBuilderDeps {
  readonly db: Database;
  readonly projection: SessionProjection;
  readonly rules: RulesResolver;
  readonly sessions: SessionEventsReader;
  readonly now: () => number;
  readonly sha256: (text: string) => string;
  readonly logger: BuilderLogger;
  readonly options?: PromptBuilderOptions;
  /** Ids of PrefixEvent messages; they identify observations, not bodies, so they may be random. */
  readonly newEventId?: () => string;
  /**
   * Benchmark baseline only (policy "naive"): the raw workspace rules as they are right now ('' when
   * absent), read on every build instead of asking rules-snapshot.
   */
  readonly readRulesRaw?: (source: ResolveRequest["source"]) => Promise<string>;
}

const RESERVED_SECTION_KEYS: ReadonlySet<string> = new Set([CURRENT_DATE_SECTION_KEY, WORKSPACE_RULES_SECTION_KEY]);
const MAX_SESSION_ID_LENGTH = 128;
export const PREFIX_EVENT_SCHEMA_VERSION = 1;
/** fingerprint_json of a row created before its first build committed. */
const NO_FINGERPRINT = "";

/** The request after validation, in domain terms. */
export interface ValidatedBuildRequest {
  readonly sessionId: string;
  readonly minSeq: number;
  readonly sections: readonly SystemSection[];
  readonly tools: readonly ToolDefinition[];
  readonly contextWindow: number | null;
  readonly wireFormat: WireFormat;
  readonly model: string;
  readonly workspace: string;
  readonly rulesSource: ResolveRequest["source"];
  readonly embed: boolean;
  readonly allowShellClock: boolean | undefined;
  readonly locale: Locale;
  readonly maxOutputTokens: number | undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Checks every field before any I/O. @throws ValidationError naming the first bad field. */
// Bounds on what a harness sends per build: generous for real prompts, far below what would hurt
// memory or the stores (a fingerprint row, the outbox payload).
const SECTION_KEY = /^[A-Za-z0-9_.-]{1,64}$/;
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_SECTION_CHARS = 256 * 1024;
const MAX_TOOL_DESCRIPTION_CHARS = 16 * 1024;
const MAX_TOOL_SCHEMA_CHARS = 64 * 1024;
const MAX_MODEL_CHARS = 200;
const MAX_WORKSPACE_CHARS = 1024;
const MAX_RULES_CONTENT_CHARS = 1024 * 1024;

export function validateBuildRequest(request: BuildRequestRequest): ValidatedBuildRequest {
  requireId(request.sessionId, "session_id", MAX_SESSION_ID_LENGTH);
  if (!Number.isSafeInteger(request.minSeq) || request.minSeq < 0) {
    throw new ValidationError("min_seq", `must be an integer >= 0, got ${String(request.minSeq)}`);
  }

  const keys = new Set<string>();
  const sections = request.sections.map((section, index): SystemSection => {
    const field = `sections[${index}].key`;
    if (section.key.length === 0) throw new ValidationError(field, "must not be empty");
    if (!SECTION_KEY.test(section.key)) throw new ValidationError(field, "must be 1-64 characters of [A-Za-z0-9_.-]");
    if (section.text.length > MAX_SECTION_CHARS) {
      throw new ValidationError(`sections[${index}].text`, `must be at most ${MAX_SECTION_CHARS} characters`);
    }
    if (RESERVED_SECTION_KEYS.has(section.key)) {
      throw new ValidationError(
        field,
        `${JSON.stringify(section.key)} is reserved for the section prompt-assembly renders`,
      );
    }
    if (keys.has(section.key)) throw new ValidationError(field, `duplicate section key ${JSON.stringify(section.key)}`);
    keys.add(section.key);
    return { key: section.key, text: section.text };
  });

  const names = new Set<string>();
  const tools = request.tools.map((tool, index): ToolDefinition => {
    if (tool.name.length === 0) throw new ValidationError(`tools[${index}].name`, "must not be empty");
    // The providers' own rule for function names; anything else breaks the request at the provider.
    if (!TOOL_NAME.test(tool.name))
      throw new ValidationError(`tools[${index}].name`, "must be 1-64 characters of [A-Za-z0-9_-]");
    if (tool.description.length > MAX_TOOL_DESCRIPTION_CHARS) {
      throw new ValidationError(
        `tools[${index}].description`,
        `must be at most ${MAX_TOOL_DESCRIPTION_CHARS} characters`,
      );
    }
    if (tool.inputSchemaJson.length > MAX_TOOL_SCHEMA_CHARS) {
      throw new ValidationError(
        `tools[${index}].input_schema_json`,
        `must be at most ${MAX_TOOL_SCHEMA_CHARS} characters`,
      );
    }
    if (names.has(tool.name)) {
      throw new ValidationError(`tools[${index}].name`, `duplicate tool name ${JSON.stringify(tool.name)}`);
    }
    names.add(tool.name);
    const field = `tools[${index}].input_schema_json`;
    const schema = parseJsonStrict(tool.inputSchemaJson, field);
    if (!isPlainObject(schema)) throw new ValidationError(field, "must be a JSON object");
    return { name: tool.name, description: tool.description, inputSchema: schema };
  });

  const wireFormat = wireFormatOfProto(request.wireFormat);
  if (wireFormat === undefined) {
    throw new ValidationError("wire_format", `must be set to a known format, got ${String(request.wireFormat)}`);
  }
  requireBoundedText(request.model, "model", MAX_MODEL_CHARS);
  if (request.workspace.length > MAX_WORKSPACE_CHARS)
    throw new ValidationError("workspace", `must be at most ${MAX_WORKSPACE_CHARS} characters`);
  if (
    request.rulesSource?.$case === "rulesContent" &&
    request.rulesSource.value.text.length > MAX_RULES_CONTENT_CHARS
  ) {
    throw new ValidationError("rules_content.text", `must be at most ${MAX_RULES_CONTENT_CHARS} characters`);
  }
  if (request.contextWindow !== undefined && !(Number.isInteger(request.contextWindow) && request.contextWindow > 0)) {
    throw new ValidationError("context_window", `must be > 0 when set, got ${String(request.contextWindow)}`);
  }
  if (
    request.maxOutputTokens !== undefined &&
    !(Number.isInteger(request.maxOutputTokens) && request.maxOutputTokens > 0)
  ) {
    throw new ValidationError("max_output_tokens", `must be > 0 when set, got ${String(request.maxOutputTokens)}`);
  }
  const locale = request.locale === "" ? "zh-CN" : request.locale;
  if (locale !== "zh-CN" && locale !== "en") {
    throw new ValidationError("locale", `must be "zh-CN" or "en", got ${JSON.stringify(request.locale)}`);
  }

  let rulesSource: ResolveRequest["source"];
  if (request.rulesSource?.$case === "rulesFile") rulesSource = { $case: "file", value: request.rulesSource.value };
  if (request.rulesSource?.$case === "rulesContent") {
    rulesSource = { $case: "content", value: request.rulesSource.value };
  }

  return {
    sessionId: request.sessionId,
    minSeq: request.minSeq,
    sections,
    tools,
    contextWindow: request.contextWindow ?? null,
    wireFormat,
    model: request.model,
    workspace: request.workspace,
    rulesSource,
    embed: request.embed,
    allowShellClock: request.allowShellClock,
    locale,
    maxOutputTokens: request.maxOutputTokens,
  };
}

const localDateFormatters = new Map<string, Intl.DateTimeFormat>();

/** YYYY-MM-DD at instant `ms` in `timeZone`, computed the way session-events computes message dates. */
export function localDateIn(ms: number, timeZone: string): string {
  let formatter = localDateFormatters.get(timeZone);
  if (formatter === undefined) {
    try {
      formatter = new Intl.DateTimeFormat("en-US", {
        timeZone,
        calendar: "gregory",
        numberingSystem: "latn",
        year: "numeric",
        month: "2-digit",
        day: "2-digit",
      });
    } catch (error) {
      throw new InternalError(`stored session timezone ${JSON.stringify(timeZone)} is not a time zone`, {
        cause: error,
      });
    }
    localDateFormatters.set(timeZone, formatter);
  }
  const parts = formatter.formatToParts(new Date(ms));
  const value = (type: Intl.DateTimeFormatPartTypes): string => parts.find((part) => part.type === type)?.value ?? "";
  return `${value("year").padStart(4, "0")}-${value("month")}-${value("day")}`;
}

/** "PINNED" for DECISION_PINNED: the form CauseHints uses. */
export function decisionName(decision: Decision): string {
  return decisionToJSON(decision).replace(/^DECISION_/, "");
}

const SKIPPED_EMBED: ResolveResponse = {
  sectionText: "",
  decision: Decision.DECISION_SKIPPED_EMBED,
  rulesHash: "",
  pinnedGeneration: 0,
  warning: "",
};

/** What a build hands its prefix monitor. `rulesDecision` is the CauseHints name ("PINNED", "REREAD", ...). */
interface PrefixRecordArgs {
  readonly sessionId: string;
  readonly requestId: string;
  readonly fingerprint: PrefixFingerprint;
  readonly chatRequest: ChatRequest;
  readonly view: ProjectedSessionView;
  readonly rulesDecision: string;
  readonly droppedTurns: number;
  readonly anchorDate: string;
  readonly dateNotices: readonly string[];
  readonly estimatedTokens: number;
  readonly model: string;
}

interface StoredPrefix {
  readonly fingerprint: PrefixFingerprint | null;
  readonly generation: number;
  readonly droppedTurns: number;
  readonly anchorDate: string;
}

/** Entries of the naive policy's in-memory monitor, like the seeds' process-local 512-entry LRU. */
const NAIVE_MONITOR_CAPACITY = 512;
/** Seed 001 §1.2: the first 200 lines of AGENTS.md. */
const NAIVE_RULES_MAX_LINES = 200;

/**
 * Benchmark baseline: the section the pre-snapshot engine rendered from a fresh read (heading, the
 * first NAIVE_RULES_MAX_LINES lines, a notice when more were cut), the same shape rules-snapshot
 * renders, so the two policies differ in when the text is read, not in how it looks.
 */
export function renderNaiveRulesSection(rawText: string, locale: Locale): string {
  const body = rawText.replace(/\r\n?/g, "\n").trimEnd();
  if (body.trim().length === 0) return "";
  const lines = body.split("\n");
  const shown = lines.slice(0, NAIVE_RULES_MAX_LINES);
  const parts = [locale === "zh-CN" ? "## 工作区规则" : "## Workspace rules", "", ...shown];
  if (lines.length > shown.length) {
    parts.push(
      "",
      locale === "zh-CN" ? `…（仅展示前${shown.length}行）` : `… (showing only the first ${shown.length} lines)`,
    );
  }
  return parts.join("\n");
}

const NAIVE_RULES: ResolveResponse = {
  sectionText: "",
  decision: Decision.DECISION_UNSPECIFIED,
  rulesHash: "",
  pinnedGeneration: 0,
  warning: "",
};

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class PromptBuilder {
  private readonly minSeqWaitMs: number;
  private readonly pollIntervalMs: number;
  private readonly currentDatePosition: number;
  private readonly canonicalToolOrder: boolean;
  private readonly anthropicCacheMinimums: Readonly<Record<string, number>>;
  private readonly rulesTimeoutMs: number;
  private readonly newEventId: () => string;
  private readonly naive: boolean;
  /** Naive policy only: the monitor's state, lost with the process (seed 001 §1.2 "重启即失忆"). */
  private readonly naiveMonitor = new Map<string, StoredPrefix>();

  constructor(private readonly deps: PromptBuilderDeps) {
    const options = deps.options ?? {};
    this.naive = (options.policy ?? "stabilised") === "naive";
    if (this.naive && deps.readRulesRaw === undefined) {
      throw new ValidationError("deps.readRulesRaw", 'is required by policy "naive"');
    }
    this.minSeqWaitMs = options.minSeqWaitMs ?? 1_000;
    this.pollIntervalMs = Math.max(1, options.minSeqPollIntervalMs ?? 20);
    this.currentDatePosition = options.currentDatePosition ?? 4;
    this.canonicalToolOrder = options.canonicalToolOrder ?? true;
    this.anthropicCacheMinimums = parseCacheMinimums(
      options.anthropicCacheMinimums ?? {},
      "options.anthropicCacheMinimums",
    );
    this.rulesTimeoutMs = options.rulesTimeoutMs ?? 2_000;
    this.newEventId = deps.newEventId ?? (() => newEventId(deps.now()));
    if (!Number.isInteger(this.currentDatePosition) || this.currentDatePosition < 0) {
      throw new ValidationError("options.currentDatePosition", "must be an integer >= 0");
    }
  }

  async buildRequest(request: BuildRequestRequest): Promise<BuildRequestResponse> {
    const input = validateBuildRequest(request);
    await this.ensureProjection(input.sessionId, input.minSeq);
    const view = await this.deps.projection.loadSessionView(input.sessionId);
    const embed = input.embed || view.kind === "embed";

    const today = localDateIn(this.deps.now(), view.timezone);
    const anchorDate = this.naive ? today : resolveAnchorDate(view.messages, today);
    const rules = this.naive
      ? await this.readWorkspaceRulesNaively(input, embed)
      : await this.resolveWorkspaceRules(input, view, embed);

    const currentDate: SystemSection = {
      key: CURRENT_DATE_SECTION_KEY,
      text: renderCurrentDateSection(anchorDate, {
        locale: input.locale,
        // Embedded page agents have no shell, so the hint would point at a tool they lack.
        allowShellClock: input.allowShellClock ?? !embed,
      }),
    };
    const position = Math.min(this.currentDatePosition, input.sections.length);
    const system: SystemSection[] = [
      ...input.sections.slice(0, position),
      currentDate,
      ...input.sections.slice(position),
    ];
    if (rules.sectionText.length > 0) system.push({ key: WORKSPACE_RULES_SECTION_KEY, text: rules.sectionText });

    const window = buildHistoryWindow(view, { contextWindow: input.contextWindow, locale: input.locale });
    const previousUserDate = previousUserDateBefore(view.messages, firstUserSeq(window.messages));
    // The naive baseline predates <date-change>: its date section simply moves.
    const notices = this.naive
      ? { messages: window.messages, noticeDates: [] }
      : applyDateChangeNotices(window.messages, anchorDate, previousUserDate, input.locale);
    const messages = attachSummary(notices.messages, window.summaryText, input.locale);

    // Sorted before fingerprinting, so a harness that lists the same tools in another order
    // changes neither the bytes nor the fingerprint.
    const tools = orderTools(input.tools, { canonicalToolOrder: this.canonicalToolOrder });
    const chatRequest: ChatRequest = {
      model: input.model,
      system,
      tools,
      messages,
      ...(input.maxOutputTokens === undefined ? {} : { maxOutputTokens: input.maxOutputTokens }),
      promptCacheKey: input.sessionId,
    };
    const bodyJson = wireFormatPlugin(input.wireFormat).serializeJson(chatRequest, {
      cacheMinimumTokens: cacheMinimumTokensFor(input.model, this.anthropicCacheMinimums),
      summaryHead: window.summaryText !== null,
    });
    const requestId = this.deps.sha256(canonicalJson([input.sessionId, bodyJson], "request_id"));
    const fingerprint = fingerprintRequest(chatRequest, this.deps.sha256);

    const record = this.naive ? this.recordPrefixInMemory.bind(this) : this.recordPrefix.bind(this);
    const comparison = await record({
      sessionId: input.sessionId,
      requestId,
      fingerprint,
      chatRequest,
      view,
      rulesDecision: this.naive ? DECISION_REREAD : decisionName(rules.decision),
      droppedTurns: window.stats.droppedTurns,
      anchorDate,
      dateNotices: notices.noticeDates,
      estimatedTokens: estimateTokens(bodyJson),
      model: input.model,
    });
    if (comparison.changed) {
      this.deps.logger.warn(
        { session_id: input.sessionId, request_id: requestId },
        formatPrefixChangedLog(input.sessionId, comparison, chatRequest.messages.length),
      );
    }

    return {
      requestId,
      bodyJson,
      sections: fingerprint.sections.map((section) => ({ ...section })),
      toolsHash: fingerprint.toolsHash,
      history: { ...window.stats },
      checkpointDue: window.checkpointDue,
      estimatedTokens: estimateTokens(bodyJson),
      rulesDecision: rules.decision,
      prefix: {
        changed: comparison.changed,
        changedSections: [...comparison.changedSections],
        toolsChanged: comparison.toolsChanged,
        historyRewritten: comparison.historyRewritten,
        cause: comparison.cause,
        firstBuild: comparison.firstBuild,
      },
      dateNotices: notices.noticeDates,
      anchorDate,
      projectionSeq: view.lastSeq,
    };
  }

  /**
   * Read-your-writes (DESIGN "Consistency"): a seq returned by SaveMessage is in the projection
   * before the build reads it. The Kafka consumer usually gets there first, so wait for it briefly;
   * then read the missing events from session-events. A session never seen is caught up at once.
   */
  private async ensureProjection(sessionId: string, minSeq: number): Promise<void> {
    const { projection } = this.deps;
    let seq = await projection.projectionSeq(sessionId);
    if (seq > 0 && seq >= minSeq) return;
    if (seq > 0) {
      // Counted in polls, not measured with the injected clock: a fixed test clock must not hang.
      const polls = Math.ceil(this.minSeqWaitMs / this.pollIntervalMs);
      for (let poll = 0; poll < polls && seq < minSeq; poll += 1) {
        await sleep(this.pollIntervalMs);
        seq = await projection.projectionSeq(sessionId);
      }
      if (seq >= minSeq) return;
    }
    seq = await projection.catchUp(sessionId, this.deps.sessions);
    if (seq < minSeq) {
      throw new FailedPreconditionError(
        `min_seq ${minSeq} is beyond session ${sessionId}'s last event (seq ${seq}) in session-events`,
        { reason: "min_seq_not_reached", context: { session_id: sessionId, min_seq: minSeq, projection_seq: seq } },
      );
    }
  }

  /** Benchmark baseline: whatever the source says now, rendered, no snapshot. */
  private async readWorkspaceRulesNaively(input: ValidatedBuildRequest, embed: boolean): Promise<ResolveResponse> {
    if (embed) return SKIPPED_EMBED;
    const read = this.deps.readRulesRaw;
    if (read === undefined) throw new InternalError('policy "naive" without readRulesRaw');
    const raw = await read(input.rulesSource);
    return { ...NAIVE_RULES, sectionText: renderNaiveRulesSection(raw, input.locale) };
  }

  private async resolveWorkspaceRules(
    input: ValidatedBuildRequest,
    view: ProjectedSessionView,
    embed: boolean,
  ): Promise<ResolveResponse> {
    // Embedded page agents never get the section (seed 001 §4.3); asking would only add a
    // dependency that can fail the build for nothing.
    if (embed) return SKIPPED_EMBED;
    const request: ResolveRequest = {
      sessionId: input.sessionId,
      workspace: input.workspace,
      source: input.rulesSource,
      compactionGeneration: view.generation,
      embed: false,
    };
    let response: ResolveResponse;
    try {
      response = await this.deps.rules.resolve(request, this.rulesTimeoutMs);
    } catch (error) {
      // The caller's own mistakes (bad path, workspace) are reported as such; anything else is an
      // outage the harness should retry.
      if (
        isPrefixGuardError(error) &&
        ["invalid_argument", "permission_denied", "failed_precondition"].includes(error.code)
      ) {
        throw error;
      }
      throw new UnavailableError("rules-snapshot unavailable", {
        cause: error,
        reason: "rules_snapshot_unavailable",
        context: { session_id: input.sessionId },
      });
    }
    if (response.decision === Decision.DECISION_DEGRADED_RAW) {
      this.deps.logger.warn(
        { session_id: input.sessionId, warning: response.warning },
        `workspace rules degraded to raw text session=${input.sessionId}`,
      );
    }
    return response;
  }

  /**
   * Benchmark baseline: the monitor as the seeds had it, a process-local LRU. A new process starts
   * empty, so every session's next build after a restart reads as a first build and whatever
   * changed across the restart goes unreported (seed 001 §1.2). What it does see it still
   * publishes as PrefixEvents, so cache-monitor and `prefixctl collapses` can be judged on the
   * naive run's data too; the seeds' monitor only logged.
   */
  private async recordPrefixInMemory(args: PrefixRecordArgs): Promise<PrefixComparison> {
    const previous = this.naiveMonitor.get(args.sessionId) ?? null;
    const comparison = comparePrefix(previous?.fingerprint ?? null, args.fingerprint, {
      compactionGenerationBefore: previous?.generation ?? null,
      compactionGenerationNow: args.view.generation,
      rulesDecision: args.rulesDecision,
      droppedTurnsBefore: previous?.droppedTurns ?? null,
      droppedTurnsNow: args.droppedTurns,
      anchorDateBefore: previous?.anchorDate ?? null,
      anchorDateNow: args.anchorDate,
      dateSource: "today",
    });
    const nowMs = this.deps.now();
    const events = this.prefixEvents(args, comparison, previous?.fingerprint ?? null, nowMs);
    try {
      await this.deps.db.transaction((trx) => this.enqueuePrefixEvents(trx, args.sessionId, events, nowMs));
    } catch (error) {
      throw translateDbError(error, { session_id: args.sessionId });
    }
    this.naiveMonitor.delete(args.sessionId);
    this.naiveMonitor.set(args.sessionId, {
      fingerprint: args.fingerprint,
      generation: args.view.generation,
      droppedTurns: args.droppedTurns,
      anchorDate: args.anchorDate,
    });
    const oldest = this.naiveMonitor.keys().next();
    if (this.naiveMonitor.size > NAIVE_MONITOR_CAPACITY && oldest.done !== true) this.naiveMonitor.delete(oldest.value);
    return comparison;
  }

  /**
   * Compares with the session's stored fingerprint and stores the new one, in one transaction with
   * the PrefixEvent outbox rows: the event is published if and only if the fingerprint moved.
   */
  private async recordPrefix(args: PrefixRecordArgs): Promise<PrefixComparison> {
    const { sessionId, requestId, fingerprint } = args;
    const nowMs = this.deps.now();
    try {
      // FOR UPDATE on a missing row takes only a gap lock in InnoDB, and two first builds holding
      // gap locks deadlock on their inserts. An empty row created up front (its own statement,
      // a no-op when present) gives every build a record lock to queue on instead.
      await this.deps
        .db("pa_prefix_fingerprint")
        .insert({
          session_id: sessionId,
          fingerprint_json: NO_FINGERPRINT,
          generation: 0,
          dropped_turns: 0,
          anchor_date: "",
          request_id: "",
          updated_at_ms: nowMs,
        })
        .onConflict("session_id")
        .ignore();
      // Concurrent builds of one session can still be picked as InnoDB deadlock victims; the
      // transaction rolled back whole, so it is rerun rather than failing the build.
      return await retryOnDeadlock(() =>
        this.deps.db.transaction(async (trx) => {
          const previous = await this.readStoredPrefix(trx, sessionId);
          const hints: CauseHints = {
            compactionGenerationBefore: previous?.generation ?? null,
            compactionGenerationNow: args.view.generation,
            rulesDecision: args.rulesDecision,
            droppedTurnsBefore: previous?.droppedTurns ?? null,
            droppedTurnsNow: args.droppedTurns,
            anchorDateBefore: previous?.anchorDate ?? null,
            anchorDateNow: args.anchorDate,
          };
          const comparison = comparePrefix(previous?.fingerprint ?? null, fingerprint, hints);

          await trx("pa_prefix_fingerprint")
            .insert({
              session_id: sessionId,
              fingerprint_json: canonicalJson(fingerprint, "fingerprint"),
              generation: args.view.generation,
              dropped_turns: args.droppedTurns,
              anchor_date: args.anchorDate,
              request_id: requestId,
              updated_at_ms: nowMs,
            })
            .onConflict("session_id")
            .merge();
          const events = this.prefixEvents(args, comparison, previous?.fingerprint ?? null, nowMs);
          await this.enqueuePrefixEvents(trx, sessionId, events, nowMs);
          return comparison;
        }),
      );
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }

  /** FingerprintObserved for every build, plus PrefixChanged when the prefix moved. */
  private prefixEvents(
    args: PrefixRecordArgs,
    comparison: PrefixComparison,
    previousFingerprint: PrefixFingerprint | null,
    nowMs: number,
  ): PrefixEvent[] {
    const { sessionId, requestId, fingerprint } = args;
    const envelope = { sessionId, occurredAtMs: nowMs, schemaVersion: PREFIX_EVENT_SCHEMA_VERSION, requestId };
    const events: PrefixEvent[] = [
      {
        ...envelope,
        eventId: this.newEventId(),
        type: "FingerprintObserved",
        payload: {
          $case: "observed",
          value: {
            sections: fingerprint.sections.map((section) => ({ ...section })),
            toolsHash: fingerprint.toolsHash,
            historyHash: fingerprint.historyHash,
            messages: fingerprint.messageHashes.length,
            firstBuild: comparison.firstBuild,
            rulesDecision: args.rulesDecision,
            dateNotices: [...args.dateNotices],
            anchorDate: args.anchorDate,
            estimatedTokens: args.estimatedTokens,
            model: args.model,
            compactionGeneration: args.view.generation,
          },
        },
      },
    ];
    if (comparison.changed && previousFingerprint !== null) {
      const cost = costAfterBreak(previousFingerprint, fingerprint, args.chatRequest, comparison);
      events.push({
        ...envelope,
        eventId: this.newEventId(),
        type: "PrefixChanged",
        payload: {
          $case: "changed",
          value: {
            changedSections: [...comparison.changedSections],
            toolsChanged: comparison.toolsChanged,
            toolsChangeKind: comparison.toolsChangeKind,
            historyRewritten: comparison.historyRewritten,
            cause: comparison.cause,
            bytesAfterBreak: cost.bytes,
            tokensAfterBreak: cost.tokens,
            messages: args.chatRequest.messages.length,
          },
        },
      });
    }
    return events;
  }

  private async enqueuePrefixEvents(
    trx: Knex.Transaction,
    sessionId: string,
    events: readonly PrefixEvent[],
    nowMs: number,
  ): Promise<void> {
    const headers = traceHeaders();
    for (const event of events) {
      await enqueueOutboxMessage(trx, {
        topic: Topics.promptPrefix,
        key: sessionId,
        value: PrefixEvent.encode(event).finish(),
        headers,
        nowMs,
      });
    }
  }

  private async readStoredPrefix(trx: Knex.Transaction, sessionId: string): Promise<StoredPrefix | null> {
    const query = trx("pa_prefix_fingerprint").where({ session_id: sessionId }).first();
    // Serialises concurrent builds of one session, so each compares with the one before it.
    const row = (trx.client.config.client === "mysql2" ? await query.forUpdate() : await query) as
      | { fingerprint_json: string; generation: number | string; dropped_turns: number | string; anchor_date: string }
      | undefined;
    if (row === undefined || row.fingerprint_json === NO_FINGERPRINT) return null;
    const fingerprint = parseStoredFingerprint(row.fingerprint_json);
    if (fingerprint === null) {
      this.deps.logger.warn({ session_id: sessionId }, `stored prefix fingerprint unreadable session=${sessionId}`);
    }
    return {
      fingerprint,
      generation: Number(row.generation),
      droppedTurns: Number(row.dropped_turns),
      anchorDate: row.anchor_date,
    };
  }
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function isSectionFingerprint(value: unknown): value is SectionFingerprint {
  return (
    isPlainObject(value) &&
    typeof value.key === "string" &&
    typeof value.sha256 === "string" &&
    typeof value.chars === "number"
  );
}

/** A fingerprint read back from storage, or null when the row does not hold one (treated as a first build). */
function parseStoredFingerprint(json: string): PrefixFingerprint | null {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  if (
    !isPlainObject(value) ||
    typeof value.model !== "string" ||
    !Array.isArray(value.sections) ||
    !value.sections.every(isSectionFingerprint) ||
    typeof value.toolsHash !== "string" ||
    typeof value.toolsSetHash !== "string" ||
    !isStringArray(value.messageHashes) ||
    typeof value.historyHash !== "string"
  ) {
    return null;
  }
  return {
    model: value.model,
    sections: value.sections,
    toolsHash: value.toolsHash,
    toolsSetHash: value.toolsSetHash,
    messageHashes: value.messageHashes,
    historyHash: value.historyHash,
  };
}

function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/**
 * What a prefix change costs: the bytes (UTF-8) and estimated tokens from the first changed
 * element to the end, walking the request in the order providers build their cache prefix: tool
 * definitions, then the non-empty system sections, then the messages (each as canonical JSON of
 * role and content). Measured on the neutral model, like the fingerprint, so it is the same for
 * every wire format and does not count Anthropic's moving cache_control marker.
 */
export function costAfterBreak(
  previous: PrefixFingerprint,
  current: PrefixFingerprint,
  request: ChatRequest,
  comparison: PrefixComparison,
): { bytes: number; tokens: number } {
  const elements: string[] = [
    canonicalJson(
      request.tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })),
      "tools",
    ),
    ...request.system.filter((section) => section.text.length > 0).map((section) => section.text),
    ...request.messages.map((message, index) =>
      canonicalJson({ role: message.role, content: message.content }, `messages[${index}]`),
    ),
  ];
  const sectionCount = current.sections.length;
  let start = elements.length;
  if (comparison.modelChanged || comparison.toolsChanged) {
    start = 0;
  } else {
    const sectionBreak = firstSectionDivergence(previous.sections, current.sections);
    if (sectionBreak !== null) start = 1 + sectionBreak;
    else if (comparison.firstChangedMessageIndex !== null)
      start = 1 + sectionCount + comparison.firstChangedMessageIndex;
  }
  let bytes = 0;
  let tokens = 0;
  for (const element of elements.slice(start)) {
    bytes += utf8Bytes(element);
    tokens += estimateTokens(element);
  }
  return { bytes, tokens };
}

/** First position where the section sequence differs (added, removed, changed or moved), or null. */
function firstSectionDivergence(
  previous: readonly SectionFingerprint[],
  current: readonly SectionFingerprint[],
): number | null {
  const length = Math.max(previous.length, current.length);
  for (let index = 0; index < length; index += 1) {
    const before = previous[index];
    const now = current[index];
    if (before?.key !== now?.key || before?.sha256 !== now?.sha256) return Math.min(index, current.length);
  }
  return null;
}
