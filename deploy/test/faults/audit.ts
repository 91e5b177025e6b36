// Proof that consumers apply each event exactly once, taken by the database itself: triggers log
// every consumer-position move and every projection change in the transaction that makes it, so a
// rolled-back apply leaves no audit row and an apply done twice leaves two.
import type { Knex } from "knex";

type AuditedService = "rules-snapshot" | "prompt-assembly" | "cache-monitor";

function triggers(table: string, key: string, oldSeq: string, newSeq: string, label: string): string[] {
  const insert = (seqFrom: string) =>
    `INSERT INTO test_apply_audit (source, label, session_id, old_seq, new_seq) VALUES ('${table}', ${label}, NEW.${key}, ${seqFrom}, ${newSeq})`;
  return [
    `CREATE TRIGGER audit_${table}_insert AFTER INSERT ON ${table} FOR EACH ROW ${insert("0")}`,
    ...(oldSeq === ""
      ? []
      : [`CREATE TRIGGER audit_${table}_update AFTER UPDATE ON ${table} FOR EACH ROW ${insert(oldSeq)}`]),
  ];
}

/** Installs the audit table and triggers in a service's (migrated) MariaDB database. */
export async function installApplyAudit(db: Knex, service: AuditedService): Promise<void> {
  await db.raw(
    "CREATE TABLE test_apply_audit (id BIGINT AUTO_INCREMENT PRIMARY KEY, source VARCHAR(64), label VARCHAR(100), session_id VARCHAR(128), old_seq BIGINT, new_seq BIGINT)",
  );
  const statements =
    service === "cache-monitor"
      ? [
          ...triggers("cm_prefix_observation", "session_id", "", "0", "NEW.event_id"),
          ...triggers("cm_prefix_change", "session_id", "", "0", "NEW.event_id"),
        ]
      : [
          ...triggers("consumer_position", "session_id", "OLD.last_seq", "NEW.last_seq", "NEW.consumer"),
          ...(service === "prompt-assembly"
            ? [
                ...triggers("pa_session", "session_id", "OLD.last_seq", "NEW.last_seq", "'pa_session'"),
                ...triggers("pa_message", "session_id", "", "NEW.seq", "NEW.message_id"),
              ]
            : []),
        ];
  for (const sql of statements) await db.raw(sql);
}

/**
 * Checks that the audited moves of each session chain 0→a→b→…→last with no overlap (every event
 * applied once, in order) and end at the session's last seq, for exactly `sessions`. A consumer that
 * applies across gaps (rules-snapshot's cleanups) may start anywhere from 0.
 */
export async function auditedChains(
  db: Knex,
  source: "consumer_position" | "pa_session",
  lastSeqs: ReadonlyMap<string, number>,
  sessions: readonly string[],
  options: { acrossGaps?: boolean } = {},
): Promise<{ problems: string[]; moves: number }> {
  const rows = (await db("test_apply_audit").where({ source }).orderBy("id")) as Array<{
    session_id: string;
    old_seq: number;
    new_seq: number;
  }>;
  const problems: string[] = [];
  const reached = new Map<string, number>();
  let moves = 0;
  for (const row of rows) {
    const at = reached.get(row.session_id) ?? 0;
    const from = Number(row.old_seq);
    const to = Number(row.new_seq);
    if (to === from && to === at) continue; // a position written unchanged: nothing applied
    const chained = from === at || (options.acrossGaps === true && from === 0 && at === 0);
    if (to <= from || !chained) problems.push(`${source}/${row.session_id}: ${from}→${to} after ${at}`);
    reached.set(row.session_id, Math.max(at, to));
    moves += 1;
  }
  for (const sessionId of sessions)
    if (reached.get(sessionId) !== lastSeqs.get(sessionId))
      problems.push(`${source}/${sessionId} reached ${reached.get(sessionId)} of ${lastSeqs.get(sessionId)}`);
  if (reached.size !== sessions.length)
    problems.push(`${source}: ${reached.size} sessions moved, ${sessions.length} expected`);
  return { problems, moves };
}

/** Per session: how many rows of `source` were ever inserted, and how many distinct ones. */
export async function auditedInsertsBySession(
  db: Knex,
  source: string,
): Promise<Map<string, { rows: number; distinct: number }>> {
  const rows = (await db("test_apply_audit")
    .where({ source })
    .select("session_id")
    .count({ rows: "*" })
    .countDistinct({ distinct: "label" })
    .groupBy("session_id")) as Array<{ session_id: string; rows: number; distinct: number }>;
  return new Map(rows.map((r) => [r.session_id, { rows: Number(r.rows), distinct: Number(r.distinct) }]));
}

/** How many rows were ever inserted (all tables, or one) and how many distinct ones. */
export async function auditedInserts(db: Knex, source?: string): Promise<{ rows: number; distinct: number }> {
  const query = () => (source === undefined ? db("test_apply_audit") : db("test_apply_audit").where({ source }));
  const rows = await query().count({ n: "*" }).first();
  const distinct = await query().countDistinct({ n: "label" }).first();
  return { rows: Number(rows?.n), distinct: Number(distinct?.n) };
}
