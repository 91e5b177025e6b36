import type { SessionOwnership } from "@prefix-guard/access";
import { ensureRowsExist, lockForUpdate, translateDbError } from "@prefix-guard/db";
import type { Knex } from "knex";
import type {
  BuildArrival,
  MonitorStore as MonitorStorePort,
  MonitorTransaction,
  SessionTraceRows,
  StoredUsage,
} from "../../application/ports";
import type { AdvisedCall } from "../../domain/retention-advisor";
import { CollapseStore } from "./collapse-store";
import { handleOf, type Row, toChange, toCollapse, toObservation, toUsage } from "./monitor-rows";
import { ObservationStore } from "./observation-store";
import { UsageStore } from "./usage-store";

/**
 * cache-monitor's tables through knex; the same SQL runs on MariaDB/MySQL and SQLite. Driver errors
 * leave as typed errors (translateDbError): UnavailableError for an unreachable or deadlocked DB.
 */
export class MonitorStore implements MonitorStorePort {
  readonly usages: UsageStore;
  readonly observations: ObservationStore;
  readonly collapses: CollapseStore;

  constructor(private readonly db: Knex) {
    this.usages = new UsageStore(db);
    this.observations = new ObservationStore(db);
    this.collapses = new CollapseStore(db);
  }

  /**
   * Runs `work` in a transaction holding the session's row lock, so the usage and prefix writers of
   * one session see each other's committed rows and never join against half of them. The row is
   * created in its own statement first (ensureRowsExist explains the InnoDB gap lock it avoids).
   */
  async withSessionLock<T>(sessionId: string, nowMs: number, work: (tx: MonitorTransaction) => Promise<T>): Promise<T> {
    try {
      await ensureRowsExist(
        this.db,
        "cm_session",
        ["session_id"],
        [{ session_id: sessionId, created_at_ms: nowMs, updated_at_ms: nowMs }],
      );
      return await this.db.transaction(async (trx) => {
        await lockForUpdate(trx("cm_session").where({ session_id: sessionId }).first("session_id"));
        await trx("cm_session").where({ session_id: sessionId }).update({ updated_at_ms: nowMs });
        return work(handleOf(trx));
      });
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }

  /**
   * How much of prompt-assembly's record of this build has been stored: its FingerprintObserved is
   * cache-monitor's only record that prefix-guard built the request (a compaction request counts
   * too), and the PrefixChanged it announced is what explains the build's call.
   */
  async buildArrival(sessionId: string, requestId: string): Promise<BuildArrival> {
    try {
      return await this.observations.buildArrival(this.db, sessionId, requestId);
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }

  /** A usage already stored under this event id, read outside any session lock (a retry's fast path). */
  async storedUsage(eventId: string): Promise<StoredUsage | null> {
    try {
      return await this.usages.findUsageByEventId(this.db, eventId);
    } catch (error) {
      throw translateDbError(error, { event_id: eventId });
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

  /** Who the session belongs to, from its observed builds (null: none observed). */
  async sessionOwnership(sessionId: string): Promise<SessionOwnership | null> {
    try {
      return await this.observations.sessionOwnership(this.db, sessionId);
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }

  /** The session's last `limit` calls, oldest first, for the retention advisor. */
  async sessionCalls(sessionId: string, limit: number): Promise<AdvisedCall[]> {
    try {
      return await this.usages.sessionCalls(this.db, sessionId, limit);
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }

  /**
   * The calls of the sessions built in `workspace` (at most `maxSessions`, most recently built
   * first), each session's last `limit`, grouped by session, oldest first within each.
   */
  async workspaceCalls(workspace: string, limit: number, maxSessions: number, scope?: string): Promise<AdvisedCall[]> {
    try {
      const sessionIds = await this.observations.workspaceSessionIds(this.db, workspace, maxSessions, scope);
      const calls: AdvisedCall[] = [];
      for (const sessionId of sessionIds) {
        for (const call of await this.usages.sessionCalls(this.db, sessionId, limit))
          calls.push({ ...call, sessionId });
      }
      return calls;
    } catch (error) {
      throw translateDbError(error, { workspace });
    }
  }
}
