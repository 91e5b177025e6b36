// The SQL of pa_prefix_fingerprint, the last prefix fingerprint per session (what the next build
// is compared with), written together with the PrefixEvent outbox rows that report it.

import { enqueueOutboxMessages, type OutboxEntry } from "@prefix-guard/bus";
import { type Database, ensureRowsExist, translateDbError } from "@prefix-guard/db";
import type { Knex } from "knex";

/** fingerprint_json of a row created before its first build committed. */
export const NO_FINGERPRINT = "";

/** A stored row without its (large) fingerprint. */
export interface StoredPrefixHead {
  readonly version: number;
  readonly hasFingerprint: boolean;
  readonly generation: number;
  readonly droppedTurns: number;
  readonly anchorDate: string;
}

export interface PrefixRow {
  readonly sessionId: string;
  readonly version: number;
  readonly fingerprintJson: string;
  readonly generation: number;
  readonly droppedTurns: number;
  readonly anchorDate: string;
  readonly requestId: string;
}

/** Operations inside one recording transaction. */
export interface FingerprintTransaction {
  /** Heads of the sessions' rows, locked until commit (MySQL). */
  lockHeads(sessionIds: readonly string[]): Promise<Map<string, StoredPrefixHead>>;
  readFingerprints(sessionIds: readonly string[]): Promise<Map<string, string>>;
  write(rows: readonly PrefixRow[], events: readonly OutboxEntry[], nowMs: number): Promise<void>;
}

export class FingerprintStore {
  constructor(private readonly db: Database) {}

  /** Empty rows for sessions that may have none yet, so the locking read takes record locks. */
  async ensureRows(sessionIds: readonly string[], nowMs: number): Promise<void> {
    await ensureRowsExist(
      this.db,
      "pa_prefix_fingerprint",
      ["session_id"],
      sessionIds.map((sessionId) => ({
        session_id: sessionId,
        fingerprint_json: NO_FINGERPRINT,
        generation: 0,
        dropped_turns: 0,
        anchor_date: "",
        request_id: "",
        updated_at_ms: nowMs,
        version: 0,
      })),
    );
  }

  async transaction<T>(work: (tx: FingerprintTransaction) => Promise<T>): Promise<T> {
    return this.db.transaction((trx) =>
      work({
        lockHeads: (sessionIds) => lockHeads(trx, sessionIds),
        readFingerprints: (sessionIds) => readFingerprints(trx, sessionIds),
        write: (rows, events, nowMs) => writeRows(trx, rows, events, nowMs),
      }),
    );
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

/** Called by the projection in its own transaction when a session is re-created or removed. */
export async function forgetPrefixFingerprints(trx: Knex.Transaction, sessionIds: readonly string[]): Promise<void> {
  await trx("pa_prefix_fingerprint")
    .whereIn("session_id", [...sessionIds])
    .delete();
}

async function lockHeads(trx: Knex.Transaction, sessionIds: readonly string[]): Promise<Map<string, StoredPrefixHead>> {
  const query = trx("pa_prefix_fingerprint")
    .whereIn("session_id", [...sessionIds].sort())
    .orderBy("session_id")
    .select(
      "session_id",
      "version",
      "generation",
      "dropped_turns",
      "anchor_date",
      trx.raw("CASE WHEN fingerprint_json = '' THEN 0 ELSE 1 END AS has_fingerprint"),
    );
  const rows = (trx.client.config.client === "mysql2" ? await query.forUpdate() : await query) as Array<{
    session_id: string;
    version: number | string;
    generation: number | string;
    dropped_turns: number | string;
    anchor_date: string;
    has_fingerprint: number | string;
  }>;
  return new Map(
    rows.map((row) => [
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

async function readFingerprints(trx: Knex.Transaction, sessionIds: readonly string[]): Promise<Map<string, string>> {
  if (sessionIds.length === 0) return new Map();
  const rows = (await trx("pa_prefix_fingerprint")
    .whereIn("session_id", [...sessionIds])
    .select("session_id", "fingerprint_json")) as Array<{ session_id: string; fingerprint_json: string }>;
  return new Map(rows.map((row) => [row.session_id, row.fingerprint_json]));
}

async function writeRows(
  trx: Knex.Transaction,
  rows: readonly PrefixRow[],
  events: readonly OutboxEntry[],
  nowMs: number,
): Promise<void> {
  if (rows.length > 0) {
    await trx("pa_prefix_fingerprint")
      .insert(
        rows.map((row) => ({
          session_id: row.sessionId,
          fingerprint_json: row.fingerprintJson,
          generation: row.generation,
          dropped_turns: row.droppedTurns,
          anchor_date: row.anchorDate,
          request_id: row.requestId,
          updated_at_ms: nowMs,
          version: row.version,
        })),
      )
      .onConflict("session_id")
      .merge();
  }
  await enqueueOutboxMessages(trx, events);
}
