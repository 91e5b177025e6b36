import {
  type ApplyOutcome,
  applyInSessionOrder,
  type Executor,
  opaqueTransactions,
  translateDbError,
  withSql,
} from "@prefix-guard/db";
import { LruMap } from "@prefix-guard/lru";
import type { Knex } from "knex";
import type { SnapshotStore as SnapshotStorePort, SnapshotTransaction } from "../../application/ports";
import type { PinnedSnapshot, SnapshotRow } from "../../domain/model";

const TABLE = "session_workspace_rules";
const REFRESH_TABLE = "session_rules_refresh";

/**
 * A connection, an open transaction, or the application's handle of one: every method runs on
 * whichever it is given.
 */
export type DbExecutor = Executor<SnapshotTransaction>;

const transactions = opaqueTransactions<SnapshotTransaction>();
const { handleOf, knexOf } = transactions;
export const { transactionOf } = transactions;

interface SnapshotRecord {
  session_id: string;
  workspace: string;
  rules_text: string;
  rules_hash: string;
  source_path: string | null;
  source_mtime_ms: number | string | null;
  generation: number | string;
  last_reported_disk_hash: string | null;
  created_at_ms: number | string;
  updated_at_ms: number | string;
}

function toRow(record: SnapshotRecord): SnapshotRow {
  return {
    sessionId: record.session_id,
    workspace: record.workspace,
    rulesText: record.rules_text,
    rulesHash: record.rules_hash,
    sourcePath: record.source_path,
    sourceMtimeMs: record.source_mtime_ms === null ? null : Number(record.source_mtime_ms),
    generation: Number(record.generation),
    lastReportedDiskHash: record.last_reported_disk_hash,
    createdAtMs: Number(record.created_at_ms),
    updatedAtMs: Number(record.updated_at_ms),
  };
}

/**
 * `session_workspace_rules` through knex; the same SQL runs on MariaDB/MySQL and SQLite.
 * Driver errors leave as typed errors (translateDbError): UnavailableError for an unreachable DB.
 */
/** Every column but the text: what the grouped read asks for first. */
const COLUMNS_BUT_TEXT =
  "session_id, workspace, rules_hash, source_path, source_mtime_ms, generation, last_reported_disk_hash, created_at_ms, updated_at_ms";

/** Section texts kept by their hash for the grouped read: ~1,000 distinct 15 KB sections. */
const TEXTS_BY_HASH_BYTES = 32 * 1024 * 1024;

export class SnapshotStore implements SnapshotStorePort {
  /**
   * Section texts by rules_hash (the text's own sha256, so an entry can never be stale): the grouped
   * read fetches a row's text only for a hash it has not seen. Every retained Resolve otherwise
   * carried and decoded ~15 KB from the database for a text this process already held.
   */
  private readonly textsByHash = new LruMap<string, string>({
    maxWeight: TEXTS_BY_HASH_BYTES,
    weigh: (text, hash) => (text.length + hash.length) * 2 + 64,
  });

  constructor(private readonly db: Knex) {}

  async transaction<T>(work: (tx: SnapshotTransaction) => Promise<T>): Promise<T> {
    try {
      return await this.db.transaction((trx) => work(handleOf(trx)));
    } catch (error) {
      throw translateDbError(error);
    }
  }

  /** Runs `apply` and moves the consumer position in one transaction (libs/db applyInSessionOrder). */
  async applyInSessionOrder(
    args: { consumer: string; sessionId: string; seq: number; nowMs: number; applyAcrossGap?: boolean },
    apply: (tx: SnapshotTransaction) => Promise<void>,
  ): Promise<ApplyOutcome> {
    try {
      return await applyInSessionOrder(this.db, args, (trx) => apply(handleOf(trx)));
    } catch (error) {
      throw translateDbError(error, { sessionId: args.sessionId, seq: args.seq });
    }
  }

  afterCommit(tx: SnapshotTransaction, listener: () => void): void {
    transactionOf(tx).executionPromise.then(listener, () => undefined);
  }

  async findBySession(sessionId: string, executor: DbExecutor = this.db): Promise<SnapshotRow | null> {
    try {
      // Outside a transaction this is the read every Resolve makes: plain SQL (libs/db sql.ts), not
      // the query builder, whose own CPU held one process about a fifth below its Resolve/s.
      const record =
        executor === this.db
          ? (
              await withSql(this.db, (sql) =>
                sql.rows<SnapshotRecord>(`SELECT * FROM ${TABLE} WHERE session_id = ?`, [sessionId]),
              )
            )[0]
          : ((await knexOf(executor)(TABLE).where({ session_id: sessionId }).first()) as SnapshotRecord | undefined);
      return record === undefined ? null : toRow(record);
    } catch (error) {
      throw translateDbError(error, { sessionId });
    }
  }

  /**
   * The rows of these sessions, read together outside any transaction: the grouped read of
   * concurrent Resolves (application/read-groups.ts), one statement for the whole group.
   */
  async findBySessions(sessionIds: readonly string[]): Promise<ReadonlyMap<string, SnapshotRow>> {
    if (sessionIds.length === 0) return new Map();
    const inList = (ids: readonly string[]) => ids.map(() => "?").join(", ");
    try {
      return await withSql(this.db, async (sql) => {
        const rows = new Map<string, SnapshotRow>();
        const unknownText: string[] = [];
        const records = await sql.rows<Omit<SnapshotRecord, "rules_text">>(
          `SELECT ${COLUMNS_BUT_TEXT} FROM ${TABLE} WHERE session_id IN (${inList(sessionIds)})`,
          sessionIds,
        );
        for (const record of records) {
          const text = this.textsByHash.get(record.rules_hash);
          if (text === undefined) unknownText.push(record.session_id);
          else rows.set(record.session_id, toRow({ ...record, rules_text: text }));
        }
        if (unknownText.length === 0) return rows;
        // Read again whole: a row re-pinned in between is answered as it is now, text and all,
        // which is as fresh as the caller asked (read-groups.ts).
        const whole = await sql.rows<SnapshotRecord>(
          `SELECT * FROM ${TABLE} WHERE session_id IN (${inList(unknownText)})`,
          unknownText,
        );
        for (const record of whole) {
          this.textsByHash.set(record.rules_hash, record.rules_text);
          rows.set(record.session_id, toRow(record));
        }
        return rows;
      });
    } catch (error) {
      throw translateDbError(error, { sessions: sessionIds.length });
    }
  }

  /**
   * Insert-or-overwrite in one statement (INSERT … ON DUPLICATE KEY UPDATE / ON CONFLICT DO UPDATE):
   * concurrent first resolves of a session leave one row, and an overwrite rewrites every column —
   * workspace included — and clears the report mark (seed 001 §4.2 评审补充).
   */
  async upsert(snapshot: PinnedSnapshot, nowMs: number, executor: DbExecutor = this.db): Promise<void> {
    const record: SnapshotRecord = {
      session_id: snapshot.sessionId,
      workspace: snapshot.workspace,
      rules_text: snapshot.rulesText,
      rules_hash: snapshot.rulesHash,
      source_path: snapshot.sourcePath,
      source_mtime_ms: snapshot.sourceMtimeMs,
      generation: snapshot.generation,
      last_reported_disk_hash: null,
      created_at_ms: nowMs,
      updated_at_ms: nowMs,
    };
    try {
      await knexOf(executor)(TABLE)
        .insert(record)
        .onConflict("session_id")
        .merge([
          "workspace",
          "rules_text",
          "rules_hash",
          "source_path",
          "source_mtime_ms",
          "generation",
          "last_reported_disk_hash",
          "created_at_ms",
          "updated_at_ms",
        ]);
    } catch (error) {
      throw translateDbError(error, { sessionId: snapshot.sessionId });
    }
  }

  /** Remembers an operator's refresh until the session's next pin (one per session: the latest wins). */
  async rememberRefresh(sessionId: string, reason: string, nowMs: number, executor: DbExecutor): Promise<void> {
    try {
      await knexOf(executor)(REFRESH_TABLE)
        .insert({ session_id: sessionId, reason, requested_at_ms: nowMs })
        .onConflict("session_id")
        .merge(["reason", "requested_at_ms"]);
    } catch (error) {
      throw translateDbError(error, { sessionId });
    }
  }

  /** The refresh waiting for this session's next pin, removed as it is read (inside the pin's transaction). */
  async takeRefresh(sessionId: string, executor: DbExecutor): Promise<{ reason: string } | null> {
    try {
      const row = (await knexOf(executor)(REFRESH_TABLE).where({ session_id: sessionId }).first("reason")) as
        | { reason: string }
        | undefined;
      if (row === undefined) return null;
      await knexOf(executor)(REFRESH_TABLE).where({ session_id: sessionId }).delete();
      return { reason: row.reason };
    } catch (error) {
      throw translateDbError(error, { sessionId });
    }
  }

  async forgetRefresh(sessionId: string, executor: DbExecutor): Promise<void> {
    try {
      await knexOf(executor)(REFRESH_TABLE).where({ session_id: sessionId }).delete();
    } catch (error) {
      throw translateDbError(error, { sessionId });
    }
  }

  /** @returns the number of rows removed (0 or 1). */
  async deleteBySession(sessionId: string, executor: DbExecutor = this.db): Promise<number> {
    try {
      return Number(await knexOf(executor)(TABLE).where({ session_id: sessionId }).delete());
    } catch (error) {
      throw translateDbError(error, { sessionId });
    }
  }

  /** Deletes the row only if it was pinned under a generation older than `generation`. */
  async deleteOlderThanGeneration(
    sessionId: string,
    generation: number,
    executor: DbExecutor = this.db,
  ): Promise<number> {
    try {
      return Number(
        await knexOf(executor)(TABLE).where({ session_id: sessionId }).andWhere("generation", "<", generation).delete(),
      );
    } catch (error) {
      throw translateDbError(error, { sessionId, generation });
    }
  }

  /**
   * Records `diskHash` as reported while the row still holds `pinnedHash` and has not reported it yet.
   * @returns true if this call made the mark, false if someone already did (or the row changed).
   */
  async markReported(
    sessionId: string,
    diskHash: string,
    pinnedHash: string,
    nowMs: number,
    executor: DbExecutor = this.db,
  ): Promise<boolean> {
    try {
      const updated = await knexOf(executor)(TABLE)
        .where({ session_id: sessionId, rules_hash: pinnedHash })
        .andWhere((q) => q.whereNull("last_reported_disk_hash").orWhereNot("last_reported_disk_hash", diskHash))
        .update({ last_reported_disk_hash: diskHash, updated_at_ms: nowMs });
      return Number(updated) > 0;
    } catch (error) {
      throw translateDbError(error, { sessionId });
    }
  }
}
