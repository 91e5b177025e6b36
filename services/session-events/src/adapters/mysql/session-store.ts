// session-events' tables: the session row, the append-only session_event log (also the outbox the
// relay publishes), messages and compactions. The same SQL runs on MariaDB/MySQL and SQLite. Rows
// are decoded here, once, into the domain's and the contract's shapes; the application never sees
// a column name.

import type { SessionOwnership } from "@prefix-guard/access";
import { relayLeaseSlot } from "@prefix-guard/bus";
import { dialectOf, lockForUpdate, valueList, withSql } from "@prefix-guard/db";
import { type DataKey, decodeSessionEvent } from "@prefix-guard/events";
import type { ContentPart } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import type { Session, StoredMessage } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import type { Knex } from "knex";
import type {
  AppendKeys,
  AppendOutcome,
  DecideAppend,
  EventRow,
  NewCompaction,
  NewSession,
  SessionChanges,
  SessionStore as SessionStorePort,
  SessionTransaction as SessionTransactionPort,
  StoredDataKey,
  StoredEventPayload,
} from "../../application/ports";
import {
  kindFromName,
  type MessageState,
  roleFromName,
  type SessionKindName,
  type SessionState,
} from "../../domain/model";
import { parseStoredContent } from "../../domain/stored-content";
import { appendMessages } from "./message-append";

interface SessionRow {
  session_id: string;
  owner: string;
  workspace: string;
  timezone: string;
  kind: string;
  parent_session_id: string | null;
  last_seq: number | string;
  compaction_generation: number | string;
  compaction_boundary_message_id: string | null;
  summary: string;
  inherited_summary_from: string | null;
  content_chars: number | string;
  serialized_bytes: number | string;
  created_at_ms: number | string;
  deleted: number | boolean;
  ended: number | boolean;
  locale: string;
  scope: string;
  created_by: string;
  last_event_at_ms?: number | string;
}

interface MessageRow {
  message_id: string;
  session_id: string;
  seq: number | string;
  role: string;
  content_json: string;
  thinking_chars: number | string;
  content_chars: number | string;
  created_at_ms: number | string;
  local_date: string;
  deleted: number | boolean;
}

const MESSAGE_COLUMNS = [
  "message_id",
  "session_id",
  "seq",
  "role",
  "content_json",
  "thinking_chars",
  "content_chars",
  "created_at_ms",
  "local_date",
  "deleted",
] as const;

interface DataKeyRow {
  session_id: string;
  key_id: string;
  key_bytes: unknown;
  erased_at_ms: number | string | null;
}

/** One write transaction. Every method runs inside it. */
export class SessionTransaction implements SessionTransactionPort {
  constructor(private readonly trx: Knex.Transaction) {}

  /** With `lock`, the row stays locked (FOR UPDATE on MySQL) until the transaction ends. */
  readSession(sessionId: string, lock: boolean): Promise<SessionState | undefined> {
    return readSessionState(this.trx, sessionId, lock);
  }

  async readMessage(messageId: string): Promise<MessageState | undefined> {
    const row: MessageRow | undefined = await this.trx("message")
      .where({ message_id: messageId })
      .first(...MESSAGE_COLUMNS);
    return row === undefined ? undefined : toMessageState(row);
  }

  /** The content of the session's user messages, oldest first. */
  async userMessageContents(sessionId: string): Promise<ContentPart[][]> {
    const rows: Pick<MessageRow, "content_json">[] = await this.trx("message")
      .where({ session_id: sessionId, role: "user" })
      .orderBy("seq")
      .select("content_json");
    return rows.map((row) => parseStoredContent(row.content_json));
  }

  /** Inserts the session at seq 1 and returns it as the contract shows it. */
  async insertSession(session: NewSession): Promise<Session> {
    const row: SessionRow = {
      session_id: session.sessionId,
      owner: session.owner,
      workspace: session.workspace,
      timezone: session.timezone,
      kind: session.kind,
      parent_session_id: session.parentSessionId ?? null,
      last_seq: 1,
      compaction_generation: 0,
      compaction_boundary_message_id: null,
      summary: session.summary,
      inherited_summary_from: session.inheritedSummaryFrom ?? null,
      content_chars: 0,
      serialized_bytes: 0,
      created_at_ms: session.createdAtMs,
      deleted: false,
      ended: false,
      locale: session.locale,
      scope: session.scope,
      created_by: session.createdBy,
      last_event_at_ms: session.createdAtMs,
    };
    await this.trx("session").insert(row);
    return toSession(row);
  }

  /** Live sessions a principal created: what its session quota is checked against. */
  async countLiveSessionsCreatedBy(principal: string): Promise<number> {
    const row = await this.trx("session").where({ created_by: principal, deleted: false }).count({ n: "*" }).first();
    return Number((row as { n?: number | string } | undefined)?.n ?? 0);
  }

  async appendEvent(sessionId: string, event: EventRow): Promise<void> {
    await this.trx("session_event").insert({
      event_id: event.eventId,
      session_id: sessionId,
      seq: event.seq,
      type: event.type,
      payload: Buffer.from(event.payload.buffer, event.payload.byteOffset, event.payload.byteLength),
      occurred_at_ms: event.occurredAtMs,
      traceparent: event.traceparent,
      published_at_ms: null,
      lease_slot: relayLeaseSlot(sessionId),
    });
  }

  async flagMessageDeleted(messageId: string): Promise<void> {
    await this.trx("message").where({ message_id: messageId }).update({ deleted: true });
  }

  async insertCompaction(compaction: NewCompaction): Promise<void> {
    await this.trx("compaction").insert({
      session_id: compaction.sessionId,
      generation: compaction.generation,
      boundary_message_id: compaction.boundaryMessageId,
      summary: compaction.summary,
      committed_at_ms: compaction.committedAtMs,
    });
  }

  /**
   * Moves last_seq from the seq the decision was based on to `seq`. False when the row had already
   * moved (another writer won), and then nothing was changed.
   */
  async advanceSession(session: SessionState, seq: number, changes: SessionChanges): Promise<boolean> {
    const columns: Record<string, string | number | boolean> = { last_seq: seq };
    if (changes.contentChars !== undefined) columns.content_chars = changes.contentChars;
    if (changes.compactionGeneration !== undefined) columns.compaction_generation = changes.compactionGeneration;
    if (changes.compactionBoundaryMessageId !== undefined)
      columns.compaction_boundary_message_id = changes.compactionBoundaryMessageId;
    if (changes.summary !== undefined) columns.summary = changes.summary;
    if (changes.deleted !== undefined) columns.deleted = changes.deleted;
    if (changes.ended !== undefined) columns.ended = changes.ended;
    if (changes.lastEventAtMs !== undefined) columns.last_event_at_ms = changes.lastEventAtMs;
    const updated = await this.trx("session")
      .where({ session_id: session.sessionId, last_seq: session.lastSeq })
      .update(columns);
    return updated === 1;
  }

  /** The session's data key, read in this transaction (the session row is locked by the caller). */
  async readDataKey(sessionId: string): Promise<StoredDataKey | undefined> {
    const row: DataKeyRow | undefined = await this.trx("session_data_key")
      .where({ session_id: sessionId })
      .first("session_id", "key_id", "key_bytes", "erased_at_ms");
    return row === undefined ? undefined : toStoredDataKey(row);
  }

  async insertDataKey(sessionId: string, key: DataKey, createdAtMs: number): Promise<void> {
    await this.trx("session_data_key").insert(dataKeyRow(sessionId, key, createdAtMs));
  }

  /**
   * Destroys the session's key: its bytes are emptied and erased_at_ms set. A session from before
   * keys existed gets an erased row, so GetDataKeys answers "erased" for it too.
   */
  async eraseDataKey(sessionId: string, nowMs: number): Promise<void> {
    const updated = await this.trx("session_data_key")
      .where({ session_id: sessionId })
      .update({ key_bytes: Buffer.alloc(0), erased_at_ms: nowMs });
    if (updated === 0) {
      await this.trx("session_data_key").insert({
        session_id: sessionId,
        key_id: "",
        key_bytes: Buffer.alloc(0),
        created_at_ms: nowMs,
        erased_at_ms: nowMs,
      });
    }
  }

  async blankSummary(sessionId: string): Promise<void> {
    await this.trx("session").where({ session_id: sessionId }).update({ summary: "" });
  }

  /** Deletes the session's messages (thinking text included) and compactions (their summaries). */
  async deleteContentRows(sessionId: string): Promise<void> {
    await this.trx("message").where({ session_id: sessionId }).delete();
    await this.trx("compaction").where({ session_id: sessionId }).delete();
  }

  /** The session's event rows after row id `afterId`, in id order, `limit` at most. */
  async eventPayloads(sessionId: string, afterId: number, limit: number): Promise<StoredEventPayload[]> {
    const rows: { id: number | string; payload: unknown }[] = await this.trx("session_event")
      .where({ session_id: sessionId })
      .andWhere("id", ">", afterId)
      .orderBy("id")
      .limit(limit)
      .select("id", "payload");
    return rows.map((row) => ({ id: Number(row.id), payload: payloadBytes(row.payload) }));
  }

  /** Rewrites the payload of these event rows in one UPDATE; id, seq, type and published state stay. */
  async replaceEventPayloads(rows: readonly StoredEventPayload[]): Promise<void> {
    if (rows.length === 0) return;
    const cases = rows.map(() => "WHEN ? THEN ?").join(" ");
    await this.trx.raw(
      `UPDATE session_event SET payload = CASE id ${cases} END WHERE id IN (${valueList(rows.length)})`,
      [...rows.flatMap((row) => [row.id, toBuffer(row.payload)]), ...rows.map((row) => row.id)],
    );
  }
}

export class SessionStore implements SessionStorePort {
  constructor(private readonly db: Knex) {}

  transaction<T>(work: (tx: SessionTransaction) => Promise<T>): Promise<T> {
    return this.db.transaction((trx) => work(new SessionTransaction(trx)));
  }

  /**
   * SaveMessage for a group of messages in two round trips (message-append.ts); each `decide` sees
   * its session locked, after the group's earlier messages.
   */
  appendMessages<T>(
    group: readonly { sessionId: string; decide: DecideAppend<T> }[],
    keys: AppendKeys,
    nowMs: number,
  ): Promise<AppendOutcome<T>[]> {
    return appendMessages(
      this.db,
      group.map(({ sessionId, decide }) => ({
        sessionId,
        decide: (row, key) => decide(row === undefined ? undefined : toSessionState(row as unknown as SessionRow), key),
      })),
      keys,
      nowMs,
    );
  }

  readSession(sessionId: string): Promise<SessionState | undefined> {
    return readSessionState(this.db, sessionId, false);
  }

  /** The session as the contract shows it, deleted ones included, with the scope that decides who sees it. */
  async getSession(sessionId: string): Promise<(Session & { readonly scope: string }) | undefined> {
    const row: SessionRow | undefined = await this.db("session").where({ session_id: sessionId }).first();
    return row === undefined ? undefined : { ...toSession(row), scope: row.scope };
  }

  /** The stored keys of these sessions (those without a row are absent), in one statement. */
  async readDataKeys(sessionIds: readonly string[]): Promise<Map<string, StoredDataKey>> {
    const unique = [...new Set(sessionIds)];
    const rows: DataKeyRow[] = await this.db("session_data_key")
      .whereIn("session_id", unique)
      .select("session_id", "key_id", "key_bytes", "erased_at_ms");
    return new Map(rows.map((row) => [row.session_id, toStoredDataKey(row)]));
  }

  /** Live sessions with no activity since `cutoffMs`, the idlest first. */
  async idleSessions(cutoffMs: number, limit: number): Promise<string[]> {
    const rows: { session_id: string }[] = await this.db("session")
      .where({ deleted: false })
      .andWhere("last_event_at_ms", "<", cutoffMs)
      .orderBy("last_event_at_ms")
      .limit(limit)
      .select("session_id");
    return rows.map((row) => row.session_id);
  }

  /** Deleted sessions whose content was never erased (deleted before erasure existed). */
  async unerasedDeletedSessions(limit: number): Promise<string[]> {
    const rows: { session_id: string }[] = await this.db("session as s")
      .leftJoin("session_data_key as k", "k.session_id", "s.session_id")
      .where("s.deleted", true)
      .whereNull("k.erased_at_ms")
      .orderBy("s.session_id")
      .limit(limit)
      .select("s.session_id");
    return rows.map((row) => row.session_id);
  }

  /**
   * SQLite: moves every page from the WAL into the database file and truncates the WAL, whose old
   * frames would otherwise still hold erased rows as they were; secure_delete has zeroed them in the
   * file. MySQL: nothing to do here (InnoDB purges deleted rows itself).
   */
  async flushErasure(): Promise<void> {
    if (dialectOf(this.db) === "sqlite") await this.db.raw("PRAGMA wal_checkpoint(TRUNCATE)");
  }

  async listMessages(sessionId: string, includeDeleted: boolean): Promise<StoredMessage[]> {
    const query = this.db("message").where({ session_id: sessionId });
    if (!includeDeleted) query.andWhere({ deleted: false });
    const rows: MessageRow[] = await query.orderBy("seq").select(...MESSAGE_COLUMNS);
    return rows.map(toStoredMessage);
  }

  /**
   * Events after `afterSeq`, oldest first, never past the last_seq reported with them; undefined
   * when the session does not exist. One statement in plain SQL: prompt-assembly may ask before a build.
   */
  async readEventPage(
    sessionId: string,
    afterSeq: number,
    limit: number,
  ): Promise<{ events: SessionEvent[]; lastSeq: number; ownership: SessionOwnership } | undefined> {
    const rows = await withSql(this.db, (sql) =>
      sql.rows<{ last_seq: number | string; scope: string; owner: string; workspace: string; payload: unknown }>(
        `SELECT s.last_seq, s.scope, s.owner, s.workspace, e.payload FROM session s
           LEFT JOIN session_event e ON e.session_id = s.session_id AND e.seq > ? AND e.seq <= s.last_seq
         WHERE s.session_id = ? ORDER BY e.seq LIMIT ?`,
        [afterSeq, sessionId, limit],
      ),
    );
    const first = rows[0];
    if (first === undefined) return undefined;
    const events = rows
      .filter((row) => row.payload !== null)
      .map((row) => decodeSessionEvent(payloadBytes(row.payload)));
    return {
      events,
      lastSeq: Number(first.last_seq),
      ownership: { scope: first.scope, owner: first.owner, workspace: first.workspace },
    };
  }
}

async function readSessionState(
  db: Knex | Knex.Transaction,
  sessionId: string,
  lock: boolean,
): Promise<SessionState | undefined> {
  const query = db("session").where({ session_id: sessionId }).first();
  const row: SessionRow | undefined = await (lock ? lockForUpdate(query) : query);
  return row === undefined ? undefined : toSessionState(row);
}

function flag(value: number | boolean): boolean {
  return value === true || Number(value) === 1;
}

function toSessionState(row: SessionRow): SessionState {
  return {
    sessionId: row.session_id,
    owner: row.owner,
    scope: row.scope,
    workspace: row.workspace,
    kind: row.kind as SessionKindName,
    parentSessionId: row.parent_session_id ?? undefined,
    timezone: row.timezone,
    lastSeq: Number(row.last_seq),
    compactionGeneration: Number(row.compaction_generation),
    compactionBoundaryMessageId: row.compaction_boundary_message_id ?? undefined,
    summary: row.summary,
    contentChars: Number(row.content_chars),
    serializedBytes: Number(row.serialized_bytes),
    deleted: flag(row.deleted),
    ended: flag(row.ended),
    lastEventAtMs: Number(row.last_event_at_ms ?? row.created_at_ms),
  };
}

function toSession(row: SessionRow): Session {
  return {
    sessionId: row.session_id,
    owner: row.owner,
    workspace: row.workspace,
    timezone: row.timezone,
    kind: kindFromName(row.kind),
    parentSessionId: row.parent_session_id ?? "",
    lastSeq: Number(row.last_seq),
    compactionGeneration: Number(row.compaction_generation),
    compactionBoundaryMessageId: row.compaction_boundary_message_id ?? "",
    summary: row.summary,
    inheritedSummaryFrom: row.inherited_summary_from ?? "",
    contentChars: Number(row.content_chars),
    serializedBytes: Number(row.serialized_bytes),
    createdAtMs: Number(row.created_at_ms),
    deleted: flag(row.deleted),
    ended: flag(row.ended),
    locale: row.locale,
  };
}

function toMessageState(row: MessageRow): MessageState {
  return {
    messageId: row.message_id,
    sessionId: row.session_id,
    seq: Number(row.seq),
    contentChars: Number(row.content_chars),
    deleted: flag(row.deleted),
  };
}

function toStoredMessage(row: MessageRow): StoredMessage {
  return {
    messageId: row.message_id,
    seq: Number(row.seq),
    role: roleFromName(row.role),
    content: parseStoredContent(row.content_json),
    thinkingChars: Number(row.thinking_chars),
    createdAtMs: Number(row.created_at_ms),
    localDate: row.local_date,
    deleted: flag(row.deleted),
  };
}

function toStoredDataKey(row: DataKeyRow): StoredDataKey {
  if (row.erased_at_ms !== null) return { erased: true };
  return { erased: false, key: { keyId: row.key_id, key: payloadBytes(row.key_bytes) } };
}

function dataKeyRow(sessionId: string, key: DataKey, createdAtMs: number) {
  return {
    session_id: sessionId,
    key_id: key.keyId,
    key_bytes: toBuffer(key.key),
    created_at_ms: createdAtMs,
    erased_at_ms: null,
  };
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function payloadBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new Error("session_event.payload is not binary");
}
