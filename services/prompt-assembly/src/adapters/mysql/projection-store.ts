// The SQL of prompt-assembly's session projection (pa_session, pa_message and this consumer's
// positions); the same statements run on MariaDB/MySQL and SQLite. What an event means is decided
// in domain/session-projection.ts; this file only reads and writes rows.

import {
  type Database,
  ensureConsumerPositions,
  lockConsumerPositions,
  readConsumerPosition,
  translateDbError,
  writeConsumerPositions,
} from "@prefix-guard/db";
import { InternalError } from "@prefix-guard/errors";
import type { Knex } from "knex";
import { parseStoredContent, storedContentJson, storedRole } from "../../application/content-mapping";
import type {
  ProjectionStore as ProjectionStorePort,
  ProjectionTransaction,
  SessionWrite,
} from "../../application/ports";
import type { StoredMessage } from "../../domain/model";
import type { ProjectedSession, SessionKindName } from "../../domain/session-projection";

/** Name of this projection in consumer_position. */
export const PROJECTION_CONSUMER = "prompt-assembly";

const SESSION_KINDS: ReadonlySet<string> = new Set(["main", "side", "embed"]);

interface SessionRow {
  kind: string;
  timezone: string;
  workspace: string;
  locale: string;
  owner: string;
  scope: string;
  generation: number | string;
  boundary_message_id: string | null;
  summary: string | null;
  last_seq: number | string;
  deleted: number | boolean | string;
  ended: number | boolean | string;
}

interface MessageRow {
  message_id: string | null;
  seq: number | string | null;
  role: string | null;
  content_json: string | null;
  local_date: string | null;
  created_at_ms: number | string | null;
  message_deleted: number | boolean | string | null;
}

function flag(value: number | boolean | string | null): boolean {
  return value === true || Number(value) === 1;
}

function toSession(row: SessionRow, where: string): ProjectedSession {
  if (!SESSION_KINDS.has(row.kind)) throw new InternalError(`${where}: stored session kind ${row.kind} is unknown`);
  return {
    kind: row.kind as SessionKindName,
    timezone: row.timezone,
    workspace: row.workspace,
    locale: row.locale === "en" ? "en" : "zh-CN",
    owner: row.owner,
    scope: row.scope,
    generation: Number(row.generation),
    boundaryMessageId: row.boundary_message_id,
    summary: row.summary,
    lastSeq: Number(row.last_seq),
    deleted: flag(row.deleted),
    ended: flag(row.ended),
  };
}

const INSERT_CHUNK_ROWS = 200;

export class ProjectionStore implements ProjectionStorePort {
  constructor(private readonly db: Database) {}

  /**
   * One statement, so session row and messages come from the same moment: the session and its
   * messages up to its last_seq. Null when the session is not projected.
   */
  async readView(sessionId: string): Promise<{ session: ProjectedSession; messages: StoredMessage[] } | null> {
    let rows: Array<SessionRow & MessageRow>;
    try {
      rows = (await this.db("pa_session as s")
        .leftJoin("pa_message as m", function joinMessages() {
          this.on("m.session_id", "=", "s.session_id").andOn("m.seq", "<=", "s.last_seq");
        })
        .where("s.session_id", sessionId)
        .orderBy("m.seq", "asc")
        .select(
          "s.kind",
          "s.timezone",
          "s.workspace",
          "s.locale",
          "s.owner",
          "s.scope",
          "s.generation",
          "s.boundary_message_id",
          "s.summary",
          "s.last_seq",
          "s.deleted",
          "s.ended",
          "m.message_id",
          "m.seq",
          "m.role",
          "m.content_json",
          "m.local_date",
          "m.created_at_ms",
          "m.deleted as message_deleted",
        )) as Array<SessionRow & MessageRow>;
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
    const first = rows[0];
    if (first === undefined) return null;
    const where = `pa_session[${sessionId}]`;
    const messages: StoredMessage[] = [];
    for (const row of rows) {
      if (row.message_id === null) continue;
      messages.push({
        messageId: row.message_id,
        seq: Number(row.seq),
        role: storedRole(row.role),
        content: parseStoredContent(row.content_json ?? "", `pa_message[${sessionId}/${row.message_id}].content`),
        localDate: row.local_date ?? "",
        createdAtMs: Number(row.created_at_ms),
        deleted: flag(row.message_deleted),
      });
    }
    return { session: toSession(first, where), messages };
  }

  /** Last seq applied for the session; 0 when none. */
  async position(sessionId: string): Promise<number> {
    try {
      return await readConsumerPosition(this.db, PROJECTION_CONSUMER, sessionId);
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }

  /** Position rows for sessions about to see their first event (see ensureRowsExist). */
  async ensurePositions(sessionIds: readonly string[], nowMs: number): Promise<void> {
    try {
      await ensureConsumerPositions(this.db, PROJECTION_CONSUMER, sessionIds, nowMs);
    } catch (error) {
      throw translateDbError(error);
    }
  }

  async transaction<T>(work: (tx: ProjectionTransaction) => Promise<T>): Promise<T> {
    let dropped = false;
    const result = await this.db.transaction((trx) =>
      work({
        lockPositions: (sessionIds) => lockConsumerPositions(trx, PROJECTION_CONSUMER, sessionIds),
        readSessions: (sessionIds) => readSessions(trx, sessionIds),
        write: (writes, nowMs) => {
          dropped ||= writes.some((write) => write.dropStored);
          return writeSessions(trx, writes, nowMs);
        },
      }),
    );
    // Erasure under `make run`: a deleted session's messages must not live on in the SQLite WAL
    // (secure_delete already zeroes the freed pages of the main file).
    if (dropped && this.db.client.config.client !== "mysql2") await this.db.raw("PRAGMA wal_checkpoint(TRUNCATE)");
    return result;
  }

  /** Operator repair: forgets everything projected for the session, position included. */
  async forgetSession(sessionId: string): Promise<void> {
    try {
      await this.db.transaction(async (trx) => {
        await trx("pa_message").where({ session_id: sessionId }).delete();
        await trx("pa_session").where({ session_id: sessionId }).delete();
        await trx("consumer_position").where({ consumer: PROJECTION_CONSUMER, session_id: sessionId }).delete();
      });
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }
}

async function readSessions(
  trx: Knex.Transaction,
  sessionIds: readonly string[],
): Promise<Map<string, ProjectedSession>> {
  const sessions = new Map<string, ProjectedSession>();
  if (sessionIds.length === 0) return sessions;
  const rows = (await trx("pa_session")
    .whereIn("session_id", [...sessionIds])
    .select(
      "session_id",
      "kind",
      "timezone",
      "workspace",
      "locale",
      "owner",
      "scope",
      "generation",
      "boundary_message_id",
      "summary",
      "last_seq",
      "deleted",
      "ended",
    )) as Array<SessionRow & { session_id: string }>;
  for (const row of rows) sessions.set(row.session_id, toSession(row, `pa_session[${row.session_id}]`));
  return sessions;
}

async function writeSessions(trx: Knex.Transaction, writes: readonly SessionWrite[], nowMs: number): Promise<void> {
  if (writes.length === 0) return;
  const dropped = writes.filter((write) => write.dropStored).map((write) => write.sessionId);
  if (dropped.length > 0) await trx("pa_message").whereIn("session_id", dropped).delete();
  for (const write of writes) {
    if (write.flagStored.length === 0) continue;
    await trx("pa_message")
      .where({ session_id: write.sessionId })
      .whereIn("message_id", [...write.flagStored])
      .update({ deleted: true });
  }
  const inserts = writes.flatMap((write) =>
    write.insert.map((message) => ({
      session_id: write.sessionId,
      message_id: message.messageId,
      seq: message.seq,
      role: message.role,
      content_json: storedContentJson(message.content),
      local_date: message.localDate,
      created_at_ms: message.createdAtMs,
      deleted: message.deleted,
    })),
  );
  for (let start = 0; start < inserts.length; start += INSERT_CHUNK_ROWS) {
    await trx("pa_message").insert(inserts.slice(start, start + INSERT_CHUNK_ROWS));
  }
  const sessionRows = writes.map((write) => ({
    session_id: write.sessionId,
    kind: write.session.kind,
    timezone: write.session.timezone,
    workspace: write.session.workspace,
    locale: write.session.locale,
    owner: write.session.owner,
    scope: write.session.scope,
    generation: write.session.generation,
    boundary_message_id: write.session.boundaryMessageId,
    summary: write.session.summary,
    last_seq: write.session.lastSeq,
    deleted: write.session.deleted,
    ended: write.session.ended,
    updated_at_ms: nowMs,
  }));
  await trx("pa_session").insert(sessionRows).onConflict("session_id").merge();
  await writeConsumerPositions(
    trx,
    PROJECTION_CONSUMER,
    new Map(writes.map((write) => [write.sessionId, write.lastSeq])),
    nowMs,
  );
}
