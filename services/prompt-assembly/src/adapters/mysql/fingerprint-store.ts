// The SQL of pa_prefix_fingerprint, the last prefix fingerprint per session (what the next build
// is compared with), written together with the PrefixEvent outbox rows that report it. Plain SQL
// (libs/db sql.ts): this runs for every build.

import { type OutboxEntry, outboxInsert, outboxInsertsWhere } from "@prefix-guard/bus";
import {
  type Database,
  dialectOf,
  forUpdate,
  type Sql,
  type SqlDialect,
  type Statement,
  translateDbError,
  upsertStatement,
  valueList,
  valueRows,
  withSql,
} from "@prefix-guard/db";
import type {
  ConditionalPrefixWrite,
  FingerprintStore as FingerprintStorePort,
  PrefixGroupWrite,
  PrefixRow,
  StoredPrefixHead,
} from "../../application/ports";

/** fingerprint_json of a row created before its first build committed. */
export const NO_FINGERPRINT = "";

const PREFIX_COLUMNS = [
  "session_id",
  "fingerprint_json",
  "generation",
  "dropped_turns",
  "anchor_date",
  "request_id",
  "updated_at_ms",
  "version",
] as const;

export class FingerprintStore implements FingerprintStorePort {
  constructor(private readonly db: Database) {}

  /**
   * One transaction for a group of builds, in two round trips on MySQL (Sql.batch): create the rows
   * of sessions not seen before and lock every session's row; then, once `decide` has compared,
   * write the rows and the events and commit. `decide` may also read stored fingerprints it does
   * not remember (another round trip, only after another replica wrote the row).
   *
   * Missing rows are created before the transaction, each in its own autocommitted statement
   * (the same reason as ensureRowsExist in libs/db, in one batch with the lock): a locking read of a missing row takes only a gap lock, and
   * two groups that both hold it deadlock on their inserts.
   */
  async recordGroup<T>(
    sessionIds: readonly string[],
    unknownSessionIds: readonly string[],
    nowMs: number,
    decide: (
      heads: ReadonlyMap<string, StoredPrefixHead>,
      readFingerprints: (sessionIds: readonly string[]) => Promise<Map<string, string>>,
    ) => Promise<{ write: PrefixGroupWrite; result: T }>,
  ): Promise<T> {
    return withSql(this.db, async (sql) => {
      const sorted = [...sessionIds].sort();
      const opened = await sql.batch([
        ...createRows(sql.dialect, unknownSessionIds, nowMs),
        { sql: sql.dialect === "mysql" ? "START TRANSACTION" : "BEGIN IMMEDIATE" },
        {
          // Sorted, so two groups lock shared sessions in the same order.
          sql: `SELECT session_id, version, generation, dropped_turns, anchor_date,
                  CASE WHEN fingerprint_json = '' THEN 0 ELSE 1 END AS has_fingerprint
                FROM pa_prefix_fingerprint WHERE session_id IN (${valueList(sorted.length)})
                ORDER BY session_id${forUpdate(sql.dialect)}`,
          values: sorted,
        },
      ]);
      try {
        const { write, result } = await decide(parseHeads(opened.at(-1)), (ids) => readFingerprints(sql, ids));
        await sql.batch([...writeStatements(sql.dialect, write, nowMs), { sql: "COMMIT" }]);
        return result;
      } catch (error) {
        await sql.run("ROLLBACK").catch(() => undefined);
        throw error;
      }
    });
  }

  /** Whether writeIfUnchanged is available (MySQL: it carries an outcome between statements in a user variable). */
  get writesIfUnchanged(): boolean {
    return dialectOf(this.db) === "mysql";
  }

  /**
   * The common case of a group in one round trip instead of recordGroup's two: every row is
   * updated only if it is still at `storedVersion` (no other replica wrote it since this process
   * did), each row's events are inserted only if its update took, and all of it commits. Returns
   * the sessions written; the others changed nothing and must go through recordGroup, which locks
   * and reads what the other writer left. Updates go in session order, as recordGroup locks.
   */
  async writeIfUnchanged(writes: readonly ConditionalPrefixWrite[], nowMs: number): Promise<Set<string>> {
    const sorted = [...writes].sort((a, b) => (a.row.sessionId < b.row.sessionId ? -1 : 1));
    const statements: Statement[] = [{ sql: "START TRANSACTION" }];
    const updateAt: number[] = [];
    for (const { row, storedVersion, events } of sorted) {
      updateAt.push(statements.length);
      statements.push(
        {
          sql: `UPDATE pa_prefix_fingerprint SET ${PREFIX_COLUMNS.slice(1)
            .map((column) => `${column} = ?`)
            .join(", ")} WHERE session_id = ? AND version = ?`,
          values: [...rowValues(row, nowMs).slice(1), row.sessionId, storedVersion],
        },
        // The version always moves, so a row the update found is a row it changed.
        { sql: "SET @pg_prefix_row_written = ROW_COUNT()" },
        ...outboxInsertsWhere(events, "@pg_prefix_row_written = 1"),
      );
    }
    statements.push({ sql: "COMMIT" });
    return withSql(this.db, async (sql) => {
      try {
        const results = await sql.batch(statements);
        const written = new Set<string>();
        sorted.forEach(({ row }, index) => {
          const result = results[updateAt[index] as number];
          if (result !== undefined && !Array.isArray(result) && result.affectedRows === 1) written.add(row.sessionId);
        });
        return written;
      } catch (error) {
        // A failed statement stops the batch before COMMIT: nothing of it may stay on the connection.
        await sql.run("ROLLBACK").catch(() => undefined);
        throw error;
      }
    });
  }

  /** Removes the sessions' last fingerprints (sessions removed or re-created). */
  async forget(sessionIds: readonly string[]): Promise<void> {
    if (sessionIds.length === 0) return;
    try {
      await this.db("pa_prefix_fingerprint")
        .whereIn("session_id", [...sessionIds])
        .delete();
    } catch (error) {
      throw translateDbError(error);
    }
  }

  /** PrefixEvents that change no row (a compaction request's observation). */
  async publish(events: readonly OutboxEntry[]): Promise<void> {
    if (events.length === 0) return;
    const insert = outboxInsert(events);
    await withSql(this.db, (sql) => sql.run(insert.sql, insert.values));
  }

  /**
   * When the session's last build was recorded, with its fingerprint JSON; null when none was. Read
   * only to tell whether the session's provider cache is cold (REPIN_WHEN_COLD), so not on every build.
   */
  async lastBuild(sessionId: string): Promise<{ recordedAtMs: number; fingerprintJson: string } | null> {
    try {
      const row = (await this.db("pa_prefix_fingerprint")
        .where({ session_id: sessionId })
        .first("updated_at_ms", "fingerprint_json")) as
        | { updated_at_ms: number | string; fingerprint_json: string }
        | undefined;
      if (row === undefined || row.fingerprint_json === NO_FINGERPRINT) return null;
      return { recordedAtMs: Number(row.updated_at_ms), fingerprintJson: row.fingerprint_json };
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }

  /** For tests and operators: the stored fingerprint JSON of a session, or null. */
  async storedFingerprint(sessionId: string): Promise<string | null> {
    try {
      const row = (await this.db("pa_prefix_fingerprint").where({ session_id: sessionId }).first("fingerprint_json")) as
        | { fingerprint_json: string }
        | undefined;
      return row === undefined || row.fingerprint_json === NO_FINGERPRINT ? null : row.fingerprint_json;
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }
}

function createRows(dialect: SqlDialect, sessionIds: readonly string[], nowMs: number): Statement[] {
  if (sessionIds.length === 0) return [];
  return [
    {
      sql: `${dialect === "mysql" ? "INSERT IGNORE" : "INSERT OR IGNORE"} INTO pa_prefix_fingerprint (${PREFIX_COLUMNS.join(", ")}) VALUES ${valueRows(sessionIds.length, PREFIX_COLUMNS.length)}`,
      values: sessionIds.flatMap((sessionId) => [sessionId, NO_FINGERPRINT, 0, 0, "", "", nowMs, 0]),
    },
  ];
}

function parseHeads(rows: unknown): Map<string, StoredPrefixHead> {
  const typed = rows as Array<{
    session_id: string;
    version: number | string;
    generation: number | string;
    dropped_turns: number | string;
    anchor_date: string;
    has_fingerprint: number | string;
  }>;
  return new Map(
    typed.map((row) => [
      row.session_id,
      {
        version: Number(row.version),
        hasFingerprint: Number(row.has_fingerprint) === 1,
        generation: Number(row.generation),
        droppedTurns: Number(row.dropped_turns),
        anchorDate: row.anchor_date,
      },
    ]),
  );
}

async function readFingerprints(sql: Sql, sessionIds: readonly string[]): Promise<Map<string, string>> {
  if (sessionIds.length === 0) return new Map();
  const rows = await sql.rows<{ session_id: string; fingerprint_json: string }>(
    `SELECT session_id, fingerprint_json FROM pa_prefix_fingerprint WHERE session_id IN (${valueList(sessionIds.length)})`,
    sessionIds,
  );
  return new Map(rows.map((row) => [row.session_id, row.fingerprint_json]));
}

/** A row's values in PREFIX_COLUMNS order. */
function rowValues(row: PrefixRow, nowMs: number): unknown[] {
  return [
    row.sessionId,
    row.fingerprintJson,
    row.generation,
    row.droppedTurns,
    row.anchorDate,
    row.requestId,
    nowMs,
    row.version,
  ];
}

function writeStatements(dialect: SqlDialect, write: PrefixGroupWrite, nowMs: number): Statement[] {
  const statements: Statement[] = [];
  if (write.rows.length > 0) {
    statements.push({
      sql: upsertStatement(
        dialect,
        "pa_prefix_fingerprint",
        PREFIX_COLUMNS,
        ["session_id"],
        PREFIX_COLUMNS.slice(1),
        write.rows.length,
      ),
      values: write.rows.flatMap((row) => rowValues(row, nowMs)),
    });
  }
  if (write.events.length > 0) statements.push(outboxInsert(write.events));
  return statements;
}
