import type { Knex } from "knex";
import type { Migration } from "./migrations";

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
    const row = trx.client.config.client === "mysql2" ? await query.forUpdate() : await query;
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
