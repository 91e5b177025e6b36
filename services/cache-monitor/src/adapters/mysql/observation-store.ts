import type { SessionOwnership } from "@prefix-guard/access";
import type { Knex } from "knex";
import type { BuildArrival, ObservationRecords, StoredChange, StoredObservation } from "../../application/ports";
import type { PrefixJoin } from "../../domain/model";
import {
  bool,
  changedBlockRow,
  type DbExecutor,
  knexOf,
  type Row,
  str,
  toChange,
  toObservation,
  trafficSourceColumn,
} from "./monitor-rows";

/** What prompt-assembly observed of each build (cm_prefix_observation, cm_prefix_change) and the join of a usage with it. */
export class ObservationStore implements ObservationRecords {
  constructor(readonly _db: Knex) {}

  /** The build's first observation decides, as it does in prefixJoin. */
  async buildArrival(executor: DbExecutor, sessionId: string, requestId: string): Promise<BuildArrival> {
    const observed = (await knexOf(executor)("cm_prefix_observation")
      .where({ session_id: sessionId, request_id: requestId })
      .orderBy([
        { column: "occurred_at_ms", order: "asc" },
        { column: "event_id", order: "asc" },
      ])
      .first("prefix_changed")) as Row | undefined;
    if (observed === undefined) return "none";
    if (!bool(observed.prefix_changed)) return "complete";
    const change = await knexOf(executor)("cm_prefix_change")
      .where({ session_id: sessionId, request_id: requestId })
      .first("event_id");
    return change === undefined ? "awaiting_change" : "complete";
  }

  /** What prompt-assembly said about a request so far: its first observation and first change, if any. */
  async prefixJoin(executor: DbExecutor, sessionId: string, requestId: string): Promise<PrefixJoin> {
    const observed = (await knexOf(executor)("cm_prefix_observation")
      .where({ session_id: sessionId, request_id: requestId })
      .orderBy([
        { column: "occurred_at_ms", order: "asc" },
        { column: "event_id", order: "asc" },
      ])
      .first()) as Row | undefined;
    const change = (await knexOf(executor)("cm_prefix_change")
      .where({ session_id: sessionId, request_id: requestId })
      .orderBy([
        { column: "occurred_at_ms", order: "asc" },
        { column: "event_id", order: "asc" },
      ])
      .first()) as Row | undefined;
    const join: PrefixJoin = {
      observed: observed
        ? {
            firstBuild: bool(observed.first_build),
            workspace: String(observed.workspace ?? ""),
            ...(bool(observed.prefix_changed) ? { prefixChanged: true } : {}),
            ...trafficSourceColumn(observed.traffic_source),
            rulesDecision: String(observed.rules_decision ?? ""),
          }
        : null,
      change: change ? toChange(change) : null,
    };
    if (observed === undefined || !bool(observed.first_build)) return join;
    // The builder called it a first build: the session's previous build, if cache-monitor has one,
    // is what it should have been compared with.
    const current = toObservation(observed);
    const previous = (await knexOf(executor)("cm_prefix_observation")
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
    const existing = await knexOf(executor)("cm_prefix_observation")
      .where({ event_id: observation.eventId })
      .first("event_id");
    if (existing) return false;
    await knexOf(executor)("cm_prefix_observation").insert({
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
      workspace: observation.workspace,
      cache_retention: observation.cacheRetention,
      scope: observation.scope,
      owner: observation.owner,
      prefix_changed: observation.prefixChanged,
      traffic_source: observation.trafficSource ?? null,
      cut_json: observation.cut ? JSON.stringify(observation.cut) : null,
      received_at_ms: receivedAtMs,
    });
    return true;
  }

  /**
   * Who the session belongs to, as its latest observed build said; null when no build of it was
   * observed. A session's scope and owner never change, so any build would do; the latest is one row.
   */
  async sessionOwnership(executor: DbExecutor, sessionId: string): Promise<SessionOwnership | null> {
    const row = (await knexOf(executor)("cm_prefix_observation")
      .where({ session_id: sessionId })
      .orderBy([
        { column: "occurred_at_ms", order: "desc" },
        { column: "event_id", order: "desc" },
      ])
      .first("scope", "owner", "workspace")) as Row | undefined;
    return row === undefined ? null : { scope: str(row.scope), owner: str(row.owner), workspace: str(row.workspace) };
  }

  /** Sessions built in `workspace`, the most recently built first; with `scope`, only that scope's. */
  async workspaceSessionIds(executor: DbExecutor, workspace: string, max: number, scope?: string): Promise<string[]> {
    const rows = (await knexOf(executor)("cm_prefix_observation")
      .where(scope === undefined ? { workspace } : { workspace, scope })
      .groupBy("session_id")
      .orderByRaw("MAX(occurred_at_ms) DESC")
      .limit(max)
      .select("session_id")) as { session_id: string }[];
    return rows.map((row) => row.session_id);
  }

  /** @returns false when the event was stored already (a redelivery). */
  async insertChange(executor: DbExecutor, change: StoredChange, receivedAtMs: number): Promise<boolean> {
    const existing = await knexOf(executor)("cm_prefix_change").where({ event_id: change.eventId }).first("event_id");
    if (existing) return false;
    await knexOf(executor)("cm_prefix_change").insert({
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
      traffic_source: change.trafficSource ?? null,
      ...changedBlockRow(change),
      received_at_ms: receivedAtMs,
    });
    return true;
  }
}
