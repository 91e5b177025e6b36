// SaveMessage's transaction in plain SQL and two round trips (libs/db sql.ts): lock and read the
// session rows; then the events (which are also the outbox rows), the messages and the sessions'
// new counters, and the commit, in one batch. SaveMessage is the call every turn makes twice, so
// its database cost is most of the event pipeline's; messages saved at the same time are appended
// together (group commit, application/message-append-groups.ts), a group of one being the plain case.
//
// The session rows are locked (FOR UPDATE on MySQL, in primary-key order so two groups cannot
// deadlock; the single writer of BEGIN IMMEDIATE on SQLite) from the read to the commit, so the
// counters written are the ones read plus these messages. The UNIQUE(session_id, seq) key on the
// event still refuses a second append at the same seq: the batch stops at that statement and
// nothing of it is committed.

import { forUpdate, type Statement, valueList, valueRows, withSql } from "@prefix-guard/db";

export interface LockedSession {
  readonly [column: string]: unknown;
}

export interface MessageAppend<T> {
  readonly event: {
    readonly eventId: string;
    readonly seq: number;
    readonly type: string;
    readonly payload: Uint8Array;
    readonly occurredAtMs: number;
    readonly traceparent: string | null;
  };
  readonly message: {
    readonly messageId: string;
    readonly role: string;
    readonly contentJson: string;
    readonly thinkingText: string;
    readonly thinkingChars: number;
    readonly contentChars: number;
    readonly localDate: string;
  };
  /** The session's counters after the message; last_seq moves to event.seq. */
  readonly session: { readonly contentChars: number; readonly serializedBytes: number; readonly lastSeq: number };
  readonly result: T;
}

/** One message to append: `decide` sees its session as locked, after the group's earlier messages. */
export interface PendingAppend<T> {
  readonly sessionId: string;
  readonly decide: (session: LockedSession | undefined) => MessageAppend<T>;
}

/** What became of each message of a group: its result, or what its `decide` threw (nothing of it was written). */
export type AppendOutcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: unknown };

const EVENT_COLUMNS = 8;
const MESSAGE_COLUMNS = 11;

/**
 * Appends a group of messages in one transaction. A `decide` that throws refuses only its own
 * message; a database error rolls the whole group back and is thrown.
 */
export async function appendMessages<T>(
  db: Parameters<typeof withSql>[0],
  group: readonly PendingAppend<T>[],
): Promise<AppendOutcome<T>[]> {
  const sessionIds = [...new Set(group.map((pending) => pending.sessionId))].sort();
  return withSql(db, async (sql) => {
    const opened = await sql.batch([
      { sql: sql.dialect === "mysql" ? "START TRANSACTION" : "BEGIN IMMEDIATE" },
      {
        sql: `SELECT * FROM session WHERE session_id IN (${valueList(sessionIds.length)}) ORDER BY session_id${forUpdate(sql.dialect)}`,
        values: sessionIds,
      },
    ]);
    try {
      const locked = new Map((opened.at(-1) as LockedSession[]).map((row) => [String(row["session_id"]), row]));
      const lastSeqRead = new Map<string, number>();
      const appends: (MessageAppend<T> & { readonly sessionId: string })[] = [];
      const outcomes = group.map(({ sessionId, decide }): AppendOutcome<T> => {
        try {
          const append = decide(locked.get(sessionId));
          appends.push({ ...append, sessionId });
          if (!lastSeqRead.has(sessionId)) lastSeqRead.set(sessionId, append.session.lastSeq);
          // The next message of the same session is decided on the counters this one leaves.
          locked.set(sessionId, {
            ...locked.get(sessionId),
            last_seq: append.event.seq,
            content_chars: append.session.contentChars,
            serialized_bytes: append.session.serializedBytes,
          });
          return { ok: true, value: append.result };
        } catch (error) {
          return { ok: false, error };
        }
      });
      if (appends.length === 0) {
        await sql.run("ROLLBACK");
        return outcomes;
      }
      const finalState = new Map<string, MessageAppend<T>>();
      for (const append of appends) finalState.set(append.sessionId, append);
      const writes: Statement[] = [
        {
          sql: `INSERT INTO session_event (event_id, session_id, seq, type, payload, occurred_at_ms, traceparent, published_at_ms)
                VALUES ${valueRows(appends.length, EVENT_COLUMNS)}`,
          values: appends.flatMap(({ sessionId, event }) => [
            event.eventId,
            sessionId,
            event.seq,
            event.type,
            Buffer.from(event.payload.buffer, event.payload.byteOffset, event.payload.byteLength),
            event.occurredAtMs,
            event.traceparent,
            null,
          ]),
        },
        {
          sql: `INSERT INTO message (message_id, session_id, seq, role, content_json, thinking_text, thinking_chars,
                  content_chars, created_at_ms, local_date, deleted)
                VALUES ${valueRows(appends.length, MESSAGE_COLUMNS)}`,
          values: appends.flatMap(({ sessionId, event, message }) => [
            message.messageId,
            sessionId,
            event.seq,
            message.role,
            message.contentJson,
            message.thinkingText,
            message.thinkingChars,
            message.contentChars,
            event.occurredAtMs,
            message.localDate,
            false,
          ]),
        },
        ...[...finalState].map(([sessionId, { event, session }]) => ({
          sql: "UPDATE session SET content_chars = ?, serialized_bytes = ?, last_seq = ? WHERE session_id = ? AND last_seq = ?",
          values: [session.contentChars, session.serializedBytes, event.seq, sessionId, lastSeqRead.get(sessionId)],
        })),
        { sql: "COMMIT" },
      ];
      await sql.batch(writes);
      return outcomes;
    } catch (error) {
      await sql.run("ROLLBACK").catch(() => undefined);
      throw error;
    }
  });
}
