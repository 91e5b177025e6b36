import { ensureRowsExist, translateDbError } from "@prefix-guard/db";
import type { Knex } from "knex";
import type { CollapseExplanation, CollapseFacts } from "../../domain/call-assessment";
import { type SectionTotal, sortSectionTotals } from "../../domain/collapse-totals";
import type { EarlierCall, PrefixChange, PrefixJoin, ProviderCacheReport, UsageFacts } from "../../domain/model";

/** A connection or an open transaction: every method runs on whichever it is given. */
export type DbExecutor = Knex | Knex.Transaction;

export type UsageSource = "rpc" | "topic";

export interface StoredUsage extends UsageFacts {
  readonly id: number;
  readonly eventId: string;
  readonly sessionId: string;
  readonly cost: number;
  readonly source: UsageSource;
  readonly recordedAtMs: number;
}

export interface StoredCollapse {
  readonly id: number;
  readonly usageId: number;
  readonly sessionId: string;
  readonly requestId: string;
  readonly model: string;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly cachedShare: number;
  readonly baselineShare: number;
  readonly cost: number;
  readonly expectedCost: number;
  readonly extraCost: number;
  readonly changedSections: string[];
  readonly toolsChanged: boolean;
  readonly historyRewritten: boolean;
  readonly ourVerdict: string;
  readonly cause: string;
  readonly attribution: string;
  readonly providerCacheMissReason: string;
  readonly calledAtMs: number;
  readonly detectedAtMs: number;
  readonly updatedAtMs: number;
}

export interface SectionHashRecord {
  readonly key: string;
  readonly sha256: string;
  readonly chars: number;
}

export interface StoredObservation {
  readonly eventId: string;
  readonly sessionId: string;
  readonly requestId: string;
  readonly occurredAtMs: number;
  readonly sections: SectionHashRecord[];
  readonly toolsHash: string;
  readonly historyHash: string;
  readonly messages: number;
  readonly firstBuild: boolean;
  readonly rulesDecision: string;
  readonly dateNotices: string[];
  readonly anchorDate: string;
  readonly estimatedTokens: number;
  readonly model: string;
  readonly compactionGeneration: number;
  /** A BuildCompactionRequest, not a turn. */
  readonly compactionRequest: boolean;
}

export interface StoredChange extends PrefixChange {
  readonly eventId: string;
  readonly sessionId: string;
  readonly requestId: string;
  readonly occurredAtMs: number;
  readonly changedSections: string[];
  readonly bytesAfterBreak: number;
  readonly tokensAfterBreak: number;
  readonly messages: number;
}

export interface NewUsage {
  readonly eventId: string;
  readonly sessionId: string;
  readonly usage: UsageFacts;
  readonly cost: number;
  readonly source: UsageSource;
  readonly recordedAtMs: number;
}

export interface CollapseQuery {
  /** Window start (UTC ms, inclusive) on called_at_ms; 0 = everything kept. */
  readonly sinceMs: number;
  readonly sessionId: string | null;
}

export interface CollapseTotalsRow {
  readonly sections: SectionTotal[];
  readonly totalCollapses: number;
  readonly totalExtraCost: number;
}

/** The raw material of TraceSession: each input of one session, most recent first. */
export interface SessionTraceRows {
  readonly observations: StoredObservation[];
  readonly changes: StoredChange[];
  readonly usages: StoredUsage[];
  readonly collapses: StoredCollapse[];
}

type Row = Record<string, unknown>;

const num = (value: unknown): number => Number(value ?? 0);
const bool = (value: unknown): boolean => value === true || value === 1 || value === "1";
const str = (value: unknown): string => (value === null || value === undefined ? "" : String(value));

function parseJson<T>(text: unknown, fallback: T): T {
  try {
    return text === null || text === undefined ? fallback : (JSON.parse(String(text)) as T);
  } catch {
    return fallback;
  }
}

function stringArray(text: unknown): string[] {
  const parsed = parseJson<unknown>(text, []);
  return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === "string") : [];
}

function toUsage(row: Row): StoredUsage {
  const report = parseJson<ProviderCacheReport | null>(row.provider_report_json, null);
  return {
    id: num(row.id),
    eventId: str(row.event_id),
    sessionId: str(row.session_id),
    requestId: str(row.request_id),
    model: str(row.model),
    provider: str(row.provider),
    promptTokens: num(row.prompt_tokens),
    cachedTokens: num(row.cached_tokens),
    completionTokens: num(row.completion_tokens),
    cacheCreationTokens: num(row.cache_creation_tokens),
    reportedCost: row.reported_cost === null || row.reported_cost === undefined ? null : num(row.reported_cost),
    providerReport: report,
    calledAtMs: num(row.called_at_ms),
    cost: num(row.cost),
    source: str(row.source) === "topic" ? "topic" : "rpc",
    recordedAtMs: num(row.recorded_at_ms),
  };
}

function toCollapse(row: Row): StoredCollapse {
  return {
    id: num(row.id),
    usageId: num(row.usage_id),
    sessionId: str(row.session_id),
    requestId: str(row.request_id),
    model: str(row.model),
    promptTokens: num(row.prompt_tokens),
    cachedTokens: num(row.cached_tokens),
    cachedShare: num(row.cached_ratio),
    baselineShare: num(row.baseline_ratio),
    cost: num(row.cost),
    expectedCost: num(row.expected_cost),
    extraCost: num(row.extra_cost),
    changedSections: stringArray(row.changed_sections_json),
    toolsChanged: bool(row.tools_changed),
    historyRewritten: bool(row.history_rewritten),
    ourVerdict: str(row.our_verdict),
    cause: str(row.cause),
    attribution: str(row.attribution),
    providerCacheMissReason: str(row.provider_cache_miss_reason),
    calledAtMs: num(row.called_at_ms),
    detectedAtMs: num(row.detected_at_ms),
    updatedAtMs: num(row.updated_at_ms),
  };
}

function toObservation(row: Row): StoredObservation {
  const sections = parseJson<unknown>(row.sections_json, []);
  return {
    eventId: str(row.event_id),
    sessionId: str(row.session_id),
    requestId: str(row.request_id),
    occurredAtMs: num(row.occurred_at_ms),
    sections: Array.isArray(sections)
      ? sections.map((s: Row) => ({ key: str(s.key), sha256: str(s.sha256), chars: num(s.chars) }))
      : [],
    toolsHash: str(row.tools_hash),
    historyHash: str(row.history_hash),
    messages: num(row.messages),
    firstBuild: bool(row.first_build),
    rulesDecision: str(row.rules_decision),
    dateNotices: stringArray(row.date_notices_json),
    anchorDate: str(row.anchor_date),
    estimatedTokens: num(row.estimated_tokens),
    model: str(row.model),
    compactionGeneration: num(row.compaction_generation),
    compactionRequest: bool(row.compaction_request),
  };
}

function toChange(row: Row): StoredChange {
  return {
    eventId: str(row.event_id),
    sessionId: str(row.session_id),
    requestId: str(row.request_id),
    occurredAtMs: num(row.occurred_at_ms),
    changedSections: stringArray(row.changed_sections_json),
    toolsChanged: bool(row.tools_changed),
    toolsChangeKind: str(row.tools_change_kind),
    historyRewritten: bool(row.history_rewritten),
    cause: str(row.cause),
    bytesAfterBreak: num(row.bytes_after_break),
    tokensAfterBreak: num(row.tokens_after_break),
    messages: num(row.messages),
  };
}

function firstInsertedId(result: unknown): number {
  const first = Array.isArray(result) ? result[0] : result;
  if (typeof first === "object" && first !== null && "id" in first) return num((first as Row).id);
  return num(first);
}

/**
 * cache-monitor's tables through knex; the same SQL runs on MariaDB/MySQL and SQLite. Driver errors
 * leave as typed errors (translateDbError): UnavailableError for an unreachable or deadlocked DB.
 */
export class MonitorStore {
  constructor(private readonly db: Knex) {}

  /**
   * Runs `work` in a transaction holding the session's row lock, so the usage and prefix writers of
   * one session see each other's committed rows and never join against half of them. The row is
   * created in its own statement first (ensureRowsExist explains the InnoDB gap lock it avoids).
   */
  async withSessionLock<T>(sessionId: string, nowMs: number, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    try {
      await ensureRowsExist(
        this.db,
        "cm_session",
        ["session_id"],
        [{ session_id: sessionId, created_at_ms: nowMs, updated_at_ms: nowMs }],
      );
      return await this.db.transaction(async (trx) => {
        const query = trx("cm_session").where({ session_id: sessionId }).first("session_id");
        await (trx.client.config.client === "mysql2" ? query.forUpdate() : query);
        await trx("cm_session").where({ session_id: sessionId }).update({ updated_at_ms: nowMs });
        return work(trx);
      });
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }

  async findUsageByEventId(executor: DbExecutor, eventId: string): Promise<StoredUsage | null> {
    const row = (await executor("cm_usage").where({ event_id: eventId }).first()) as Row | undefined;
    return row ? toUsage(row) : null;
  }

  async insertUsage(executor: DbExecutor, usage: NewUsage): Promise<number> {
    const { usage: facts } = usage;
    const result = await executor("cm_usage").insert({
      event_id: usage.eventId,
      session_id: usage.sessionId,
      request_id: facts.requestId,
      model: facts.model,
      provider: facts.provider,
      prompt_tokens: facts.promptTokens,
      cached_tokens: facts.cachedTokens,
      completion_tokens: facts.completionTokens,
      cache_creation_tokens: facts.cacheCreationTokens,
      reported_cost: facts.reportedCost,
      cost: usage.cost,
      provider_report_json: facts.providerReport === null ? null : JSON.stringify(facts.providerReport),
      called_at_ms: facts.calledAtMs,
      recorded_at_ms: usage.recordedAtMs,
      source: usage.source,
    });
    return firstInsertedId(result);
  }

  /**
   * The session's calls before a point in call order — (called_at_ms, id) — oldest first, at most
   * `limit` of them. `before.id` null means "a call not stored yet": ties on called_at_ms count as earlier.
   */
  async earlierCalls(
    executor: DbExecutor,
    sessionId: string,
    before: { readonly calledAtMs: number; readonly id: number | null },
    limit: number,
  ): Promise<EarlierCall[]> {
    const rows = (await executor("cm_usage")
      .where({ session_id: sessionId })
      .andWhere((q) => {
        q.where("called_at_ms", "<", before.calledAtMs);
        if (before.id === null) q.orWhere("called_at_ms", "=", before.calledAtMs);
        else q.orWhere((tie) => tie.where("called_at_ms", "=", before.calledAtMs).andWhere("id", "<", before.id));
      })
      .orderBy([
        { column: "called_at_ms", order: "desc" },
        { column: "id", order: "desc" },
      ])
      .limit(limit)
      .select("id", "prompt_tokens", "cached_tokens", "model", "called_at_ms")) as Row[];
    if (rows.length === 0) return [];
    const earliest = (await executor("cm_usage")
      .where({ session_id: sessionId })
      .orderBy([
        { column: "called_at_ms", order: "asc" },
        { column: "id", order: "asc" },
      ])
      .first("id")) as Row | undefined;
    const earliestId = earliest ? num(earliest.id) : null;
    return rows.reverse().map((row) => ({
      promptTokens: num(row.prompt_tokens),
      cachedTokens: num(row.cached_tokens),
      model: str(row.model),
      calledAtMs: num(row.called_at_ms),
      firstOfSession: num(row.id) === earliestId,
    }));
  }

  /** What prompt-assembly said about a request so far: its first observation and first change, if any. */
  async prefixJoin(executor: DbExecutor, sessionId: string, requestId: string): Promise<PrefixJoin> {
    const observed = (await executor("cm_prefix_observation")
      .where({ session_id: sessionId, request_id: requestId })
      .orderBy([
        { column: "occurred_at_ms", order: "asc" },
        { column: "event_id", order: "asc" },
      ])
      .first()) as Row | undefined;
    const change = (await executor("cm_prefix_change")
      .where({ session_id: sessionId, request_id: requestId })
      .orderBy([
        { column: "occurred_at_ms", order: "asc" },
        { column: "event_id", order: "asc" },
      ])
      .first()) as Row | undefined;
    const join: PrefixJoin = {
      observed: observed ? { firstBuild: bool(observed.first_build) } : null,
      change: change ? toChange(change) : null,
    };
    if (observed === undefined || !bool(observed.first_build)) return join;
    // The builder called it a first build: the session's previous build, if cache-monitor has one,
    // is what it should have been compared with.
    const current = toObservation(observed);
    const previous = (await executor("cm_prefix_observation")
      // A compaction request is not the prefix the next turn continues.
      .where({ session_id: sessionId, compaction_request: false })
      .andWhere((query) =>
        query
          .where("occurred_at_ms", "<", current.occurredAtMs)
          .orWhere((same) =>
            same.where("occurred_at_ms", current.occurredAtMs).andWhere("event_id", "<", current.eventId),
          ),
      )
      .orderBy([
        { column: "occurred_at_ms", order: "desc" },
        { column: "event_id", order: "desc" },
      ])
      .first()) as Row | undefined;
    return previous === undefined ? join : { ...join, forgotten: { current, previous: toObservation(previous) } };
  }

  /** @returns false when the event was stored already (a redelivery). */
  async insertObservation(
    executor: DbExecutor,
    observation: StoredObservation,
    receivedAtMs: number,
  ): Promise<boolean> {
    const existing = await executor("cm_prefix_observation").where({ event_id: observation.eventId }).first("event_id");
    if (existing) return false;
    await executor("cm_prefix_observation").insert({
      event_id: observation.eventId,
      session_id: observation.sessionId,
      request_id: observation.requestId,
      occurred_at_ms: observation.occurredAtMs,
      sections_json: JSON.stringify(observation.sections),
      tools_hash: observation.toolsHash,
      history_hash: observation.historyHash,
      messages: observation.messages,
      first_build: observation.firstBuild,
      rules_decision: observation.rulesDecision,
      date_notices_json: JSON.stringify(observation.dateNotices),
      anchor_date: observation.anchorDate,
      estimated_tokens: observation.estimatedTokens,
      model: observation.model,
      compaction_generation: observation.compactionGeneration,
      compaction_request: observation.compactionRequest,
      received_at_ms: receivedAtMs,
    });
    return true;
  }

  /** @returns false when the event was stored already (a redelivery). */
  async insertChange(executor: DbExecutor, change: StoredChange, receivedAtMs: number): Promise<boolean> {
    const existing = await executor("cm_prefix_change").where({ event_id: change.eventId }).first("event_id");
    if (existing) return false;
    await executor("cm_prefix_change").insert({
      event_id: change.eventId,
      session_id: change.sessionId,
      request_id: change.requestId,
      occurred_at_ms: change.occurredAtMs,
      changed_sections_json: JSON.stringify(change.changedSections),
      tools_changed: change.toolsChanged,
      tools_change_kind: change.toolsChangeKind,
      history_rewritten: change.historyRewritten,
      cause: change.cause,
      bytes_after_break: change.bytesAfterBreak,
      tokens_after_break: change.tokensAfterBreak,
      messages: change.messages,
      received_at_ms: receivedAtMs,
    });
    return true;
  }

  async insertCollapse(
    executor: DbExecutor,
    args: { usageId: number; sessionId: string; usage: UsageFacts; facts: CollapseFacts; nowMs: number },
  ): Promise<StoredCollapse> {
    const { facts, usage } = args;
    const result = await executor("cm_collapse").insert({
      usage_id: args.usageId,
      session_id: args.sessionId,
      request_id: usage.requestId,
      model: usage.model,
      prompt_tokens: usage.promptTokens,
      cached_tokens: usage.cachedTokens,
      cached_ratio: facts.cachedShare,
      baseline_ratio: facts.baselineShare,
      cost: facts.cost,
      expected_cost: facts.expectedCost,
      extra_cost: facts.extraCost,
      ...explanationColumns(facts),
      called_at_ms: usage.calledAtMs,
      detected_at_ms: args.nowMs,
      updated_at_ms: args.nowMs,
    });
    const id = firstInsertedId(result);
    await this.writeSections(executor, id, args.sessionId, usage.calledAtMs, facts.extraCost, facts.totalsSections);
    const stored = await this.findCollapseById(executor, id);
    if (stored === null) throw new Error(`collapse ${id} vanished inside its own transaction`);
    return stored;
  }

  /** Rewrites what the prefix join decides (sections, cause, attribution), keeping the detection. */
  async updateCollapseExplanation(
    executor: DbExecutor,
    collapse: StoredCollapse,
    explanation: CollapseExplanation,
    nowMs: number,
  ): Promise<StoredCollapse> {
    await executor("cm_collapse")
      .where({ id: collapse.id })
      .update({ ...explanationColumns(explanation), updated_at_ms: nowMs });
    // Only the sections that changed, each by its full key: a range delete on collapse_id would take
    // gap locks in InnoDB and deadlock with another session inserting the next collapse's rows.
    const current = new Set(
      (await executor("cm_collapse_section").where({ collapse_id: collapse.id }).pluck("section")).map(String),
    );
    const wanted = new Set(explanation.totalsSections);
    for (const section of current)
      if (!wanted.has(section))
        await executor("cm_collapse_section").where({ collapse_id: collapse.id, section }).delete();
    await this.writeSections(
      executor,
      collapse.id,
      collapse.sessionId,
      collapse.calledAtMs,
      collapse.extraCost,
      [...wanted].filter((section) => !current.has(section)),
    );
    const stored = await this.findCollapseById(executor, collapse.id);
    if (stored === null) throw new Error(`collapse ${collapse.id} vanished inside its own transaction`);
    return stored;
  }

  private async writeSections(
    executor: DbExecutor,
    collapseId: number,
    sessionId: string,
    calledAtMs: number,
    extraCost: number,
    sections: readonly string[],
  ): Promise<void> {
    const unique = [...new Set(sections)];
    if (unique.length === 0) return;
    await executor("cm_collapse_section").insert(
      unique.map((section) => ({
        collapse_id: collapseId,
        section,
        session_id: sessionId,
        called_at_ms: calledAtMs,
        extra_cost: extraCost,
      })),
    );
  }

  async findCollapseById(executor: DbExecutor, id: number): Promise<StoredCollapse | null> {
    const row = (await executor("cm_collapse").where({ id }).first()) as Row | undefined;
    return row ? toCollapse(row) : null;
  }

  async findCollapseByUsage(executor: DbExecutor, usageId: number): Promise<StoredCollapse | null> {
    const row = (await executor("cm_collapse").where({ usage_id: usageId }).first()) as Row | undefined;
    return row ? toCollapse(row) : null;
  }

  /** The collapses of calls that sent this request's body, each with its usage. */
  async collapsesOfRequest(
    executor: DbExecutor,
    sessionId: string,
    requestId: string,
  ): Promise<Array<{ collapse: StoredCollapse; usage: StoredUsage }>> {
    const collapses = (
      (await executor("cm_collapse")
        .where({ session_id: sessionId, request_id: requestId })
        .orderBy("id", "asc")) as Row[]
    ).map(toCollapse);
    if (collapses.length === 0) return [];
    const usages = (
      (await executor("cm_usage").whereIn(
        "id",
        collapses.map((c) => c.usageId),
      )) as Row[]
    ).map(toUsage);
    const byId = new Map(usages.map((u) => [u.id, u]));
    return collapses.flatMap((collapse) => {
      const usage = byId.get(collapse.usageId);
      return usage ? [{ collapse, usage }] : [];
    });
  }

  async listCollapses(query: CollapseQuery, limit: number): Promise<StoredCollapse[]> {
    try {
      const builder = this.db("cm_collapse").where("called_at_ms", ">=", query.sinceMs);
      if (query.sessionId !== null) builder.andWhere({ session_id: query.sessionId });
      const rows = (await builder
        .orderBy([
          { column: "called_at_ms", order: "desc" },
          { column: "id", order: "desc" },
        ])
        .limit(limit)) as Row[];
      return rows.map(toCollapse);
    } catch (error) {
      throw translateDbError(error);
    }
  }

  /** Window totals: every collapse once, every section it is counted under once. */
  async collapseTotals(query: CollapseQuery): Promise<CollapseTotalsRow> {
    try {
      const overall = this.db("cm_collapse").where("called_at_ms", ">=", query.sinceMs);
      const perSection = this.db("cm_collapse_section").where("called_at_ms", ">=", query.sinceMs);
      if (query.sessionId !== null) {
        overall.andWhere({ session_id: query.sessionId });
        perSection.andWhere({ session_id: query.sessionId });
      }
      const total = (await overall.count({ n: "*" }).sum({ extra: "extra_cost" }).first()) as Row | undefined;
      const sections = (await perSection
        .groupBy("section")
        .select("section")
        .count({ n: "*" })
        .sum({ extra: "extra_cost" })) as Row[];
      return {
        totalCollapses: num(total?.n),
        totalExtraCost: num(total?.extra),
        sections: sortSectionTotals(
          sections.map((row) => ({ section: str(row.section), collapses: num(row.n), extraCost: num(row.extra) })),
        ),
      };
    } catch (error) {
      throw translateDbError(error);
    }
  }

  /** The session's last `limit` rows of each input; TraceSession merges them by request_id. */
  async sessionTrace(sessionId: string, limit: number): Promise<SessionTraceRows> {
    try {
      const recent = (table: string, column: string) =>
        this.db(table)
          .where({ session_id: sessionId })
          .orderBy([
            { column, order: "desc" },
            { column: table === "cm_usage" || table === "cm_collapse" ? "id" : "event_id", order: "desc" },
          ])
          .limit(limit) as Promise<Row[]>;
      const [observations, changes, usages, collapses] = await Promise.all([
        recent("cm_prefix_observation", "occurred_at_ms"),
        recent("cm_prefix_change", "occurred_at_ms"),
        recent("cm_usage", "called_at_ms"),
        recent("cm_collapse", "called_at_ms"),
      ]);
      return {
        observations: observations.map(toObservation),
        changes: changes.map(toChange),
        usages: usages.map(toUsage),
        collapses: collapses.map(toCollapse),
      };
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }
}

function explanationColumns(explanation: CollapseExplanation): Row {
  return {
    changed_sections_json: JSON.stringify(explanation.changedSections),
    tools_changed: explanation.toolsChanged,
    history_rewritten: explanation.historyRewritten,
    our_verdict: explanation.ourVerdict,
    cause: explanation.cause,
    attribution: explanation.attribution,
    provider_cache_miss_reason: explanation.providerCacheMissReason,
  };
}
