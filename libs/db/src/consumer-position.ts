import type { Knex } from "knex";
import type { Migration } from "./migrations";
import { lockForUpdate } from "./sql";

/** Shared by every consumer: the last applied seq per (consumer, session). */
export const consumerPositionTable: Migration = {
  name: "0000_consumer_position",
  async up(db) {
    await db.schema.createTable("consumer_position", (t) => {
      t.string("consumer", 100).notNullable();
      t.string("session_id", 128).notNullable();
      t.bigInteger("last_seq").notNullable();
      t.bigInteger("updated_at_ms").notNullable();
      t.primary(["consumer", "session_id"]);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("consumer_position");
  },
};

export type ApplyOutcome =
  | { readonly kind: "applied" }
  | { readonly kind: "duplicate"; readonly lastSeq: number }
  | { readonly kind: "gap"; readonly lastSeq: number };

export async function readConsumerPosition(
  db: Knex | Knex.Transaction,
  consumer: string,
  sessionId: string,
): Promise<number> {
  const row = await db("consumer_position").where({ consumer, session_id: sessionId }).first("last_seq");
  return row ? Number(row.last_seq) : 0;
}

/**
 * Applies one event exactly once per (consumer, session): the position moves in the same transaction
 * as the projection change, so a crash either keeps both or neither. A redelivered seq is skipped;
 * a seq beyond last + 1 is reported as a gap and not applied unless `applyAcrossGap` (for consumers
 * whose effects do not depend on earlier events, such as cleanup).
 */
export async function applyInSessionOrder(
  db: Knex,
  args: { consumer: string; sessionId: string; seq: number; nowMs: number; applyAcrossGap?: boolean },
  apply: (trx: Knex.Transaction) => Promise<void>,
): Promise<ApplyOutcome> {
  return db.transaction(async (trx) => {
    const query = trx("consumer_position")
      .where({ consumer: args.consumer, session_id: args.sessionId })
      .first("last_seq");
    const row = await lockForUpdate(query);
    const lastSeq = row ? Number(row.last_seq) : 0;
    if (args.seq <= lastSeq) return { kind: "duplicate", lastSeq } as const;
    if (args.seq > lastSeq + 1 && !args.applyAcrossGap) return { kind: "gap", lastSeq } as const;
    await apply(trx);
    if (row) {
      await trx("consumer_position")
        .where({ consumer: args.consumer, session_id: args.sessionId })
        .update({ last_seq: args.seq, updated_at_ms: args.nowMs });
    } else {
      await trx("consumer_position").insert({
        consumer: args.consumer,
        session_id: args.sessionId,
        last_seq: args.seq,
        updated_at_ms: args.nowMs,
      });
    }
    return { kind: "applied" } as const;
  });
}

/**
 * Inserts the rows that do not exist yet and leaves existing ones alone, in its own statement.
 *
 * InnoDB takes only a gap lock for SELECT … FOR UPDATE on a missing row, and two transactions that
 * both hold the gap and then insert into it deadlock. A row created up front gives every later
 * locking read a record lock to queue on instead. Callers run this before their transaction.
 */
export async function ensureRowsExist(
  db: Knex | Knex.Transaction,
  table: string,
  conflictColumns: readonly string[],
  rows: readonly Record<string, unknown>[],
): Promise<void> {
  if (rows.length === 0) return;
  await db(table)
    .insert([...rows])
    .onConflict([...conflictColumns])
    .ignore();
}

/** Creates missing (consumer, session) positions at 0; see ensureRowsExist. */
export async function ensureConsumerPositions(
  db: Knex,
  consumer: string,
  sessionIds: readonly string[],
  nowMs: number,
): Promise<void> {
  await ensureRowsExist(
    db,
    "consumer_position",
    ["consumer", "session_id"],
    sessionIds.map((sessionId) => ({ consumer, session_id: sessionId, last_seq: 0, updated_at_ms: nowMs })),
  );
}

/**
 * The last applied seq of each session (0 when none), locked until the transaction ends on MySQL,
 * so two writers of one session apply its events one after the other.
 */
export async function lockConsumerPositions(
  trx: Knex.Transaction,
  consumer: string,
  sessionIds: readonly string[],
): Promise<Map<string, number>> {
  const positions = new Map<string, number>(sessionIds.map((sessionId) => [sessionId, 0]));
  if (sessionIds.length === 0) return positions;
  // Sorted, so two batches lock shared sessions in the same order.
  const query = trx("consumer_position")
    .where({ consumer })
    .whereIn("session_id", [...sessionIds].sort())
    .orderBy("session_id")
    .select("session_id", "last_seq");
  const rows = (await lockForUpdate(query)) as Array<{
    session_id: string;
    last_seq: number | string;
  }>;
  for (const row of rows) positions.set(row.session_id, Number(row.last_seq));
  return positions;
}

/** Upserts the positions reached, in the transaction that applied the events. */
export async function writeConsumerPositions(
  trx: Knex.Transaction,
  consumer: string,
  positions: ReadonlyMap<string, number>,
  nowMs: number,
): Promise<void> {
  const rows = [...positions].map(([sessionId, lastSeq]) => ({
    consumer,
    session_id: sessionId,
    last_seq: lastSeq,
    updated_at_ms: nowMs,
  }));
  if (rows.length === 0) return;
  await trx("consumer_position")
    .insert(rows)
    .onConflict(["consumer", "session_id"])
    .merge(["last_seq", "updated_at_ms"]);
}
