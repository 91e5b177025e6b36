// SaveMessage's transaction in plain SQL and two round trips (libs/db sql.ts): lock and read the
// session row; then the event (which is also the outbox row), the message and the session's new
// counters, and the commit, in one batch. SaveMessage is the call every turn makes twice, so its
// database cost is most of the event pipeline's.
//
// The session row is locked (FOR UPDATE on MySQL, the single writer of BEGIN IMMEDIATE on SQLite)
// from the read to the commit, so the counters written are the ones read plus this message. The
// UNIQUE(session_id, seq) key on the event still refuses a second append at the same seq: the
// batch stops at that statement and nothing of it is committed.

import { forUpdate, type Statement, withSql } from "@prefix-guard/db";

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

export async function appendMessage<T>(
  db: Parameters<typeof withSql>[0],
  sessionId: string,
  decide: (session: LockedSession | undefined) => MessageAppend<T>,
): Promise<T> {
  return withSql(db, async (sql) => {
    const opened = await sql.batch([
      { sql: sql.dialect === "mysql" ? "START TRANSACTION" : "BEGIN IMMEDIATE" },
      { sql: `SELECT * FROM session WHERE session_id = ?${forUpdate(sql.dialect)}`, values: [sessionId] },
    ]);
    try {
      const rows = opened.at(-1) as LockedSession[];
      const append = decide(rows[0]);
      const { event, message, session } = append;
      const writes: Statement[] = [
        {
          sql: `INSERT INTO session_event (event_id, session_id, seq, type, payload, occurred_at_ms, traceparent, published_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, NULL)`,
          values: [
            event.eventId,
            sessionId,
            event.seq,
            event.type,
            Buffer.from(event.payload.buffer, event.payload.byteOffset, event.payload.byteLength),
            event.occurredAtMs,
            event.traceparent,
          ],
        },
        {
          sql: `INSERT INTO message (message_id, session_id, seq, role, content_json, thinking_text, thinking_chars,
                  content_chars, created_at_ms, local_date, deleted)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          values: [
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
          ],
        },
        {
          sql: "UPDATE session SET content_chars = ?, serialized_bytes = ?, last_seq = ? WHERE session_id = ? AND last_seq = ?",
          values: [session.contentChars, session.serializedBytes, event.seq, sessionId, session.lastSeq],
        },
        { sql: "COMMIT" },
      ];
      await sql.batch(writes);
      return append.result;
    } catch (error) {
      await sql.run("ROLLBACK").catch(() => undefined);
      throw error;
    }
  });
}
