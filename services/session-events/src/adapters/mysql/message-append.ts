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
//
// Each message is sealed with its session's data key. Keys this process holds cost nothing; a
// session whose key it lacks has the key read by the first round trip (with the session rows, under
// their lock), and a session from before keys existed gets one created in the second.

import { relayLeaseSlot } from "@prefix-guard/bus";
import { forUpdate, type Statement, valueList, valueRows, withSql } from "@prefix-guard/db";
import type { DataKey } from "@prefix-guard/events";
import type { AppendKeys, AppendOutcome, MessageAppend } from "../../application/ports";

export interface LockedSession {
  readonly [column: string]: unknown;
}

/**
 * One message to append: `decide` sees its session as locked, after the group's earlier messages,
 * and the session's data key (undefined when the session is missing or its key was erased).
 */
export interface PendingAppend<T> {
  readonly sessionId: string;
  readonly decide: (session: LockedSession | undefined, key: DataKey | undefined) => MessageAppend<T>;
}

const EVENT_COLUMNS = 9;
const MESSAGE_COLUMNS = 11;
const KEY_COLUMNS = 5;

interface KeyRow {
  readonly session_id: unknown;
  readonly key_id: unknown;
  readonly key_bytes: unknown;
  readonly erased_at_ms: unknown;
}

/**
 * Appends a group of messages in one transaction. A `decide` that throws refuses only its own
 * message; a database error rolls the whole group back and is thrown.
 */
export async function appendMessages<T>(
  db: Parameters<typeof withSql>[0],
  group: readonly PendingAppend<T>[],
  keys: AppendKeys,
  nowMs: number,
): Promise<AppendOutcome<T>[]> {
  const sessionIds = [...new Set(group.map((pending) => pending.sessionId))].sort();
  const groupKeys = new Map<string, DataKey | undefined>();
  for (const sessionId of sessionIds) {
    const key = keys.cached(sessionId);
    if (key !== undefined) groupKeys.set(sessionId, key);
  }
  const unknownKeys = sessionIds.filter((sessionId) => !groupKeys.has(sessionId));
  return withSql(db, async (sql) => {
    const opened = await sql.batch([
      { sql: sql.dialect === "mysql" ? "START TRANSACTION" : "BEGIN IMMEDIATE" },
      {
        sql: `SELECT * FROM session WHERE session_id IN (${valueList(sessionIds.length)}) ORDER BY session_id${forUpdate(sql.dialect)}`,
        values: sessionIds,
      },
      // A plain read, after the session rows are locked: every key write holds that lock too.
      ...(unknownKeys.length === 0
        ? []
        : [
            {
              sql: `SELECT session_id, key_id, key_bytes, erased_at_ms FROM session_data_key WHERE session_id IN (${valueList(unknownKeys.length)})`,
              values: unknownKeys,
            },
          ]),
    ]);
    try {
      const locked = new Map((opened[1] as LockedSession[]).map((row) => [String(row["session_id"]), row]));
      const readKeys = new Map<string, DataKey>();
      for (const row of (opened[2] ?? []) as KeyRow[]) {
        const sessionId = String(row.session_id);
        if (row.erased_at_ms !== null) groupKeys.set(sessionId, undefined);
        else {
          const key = { keyId: String(row.key_id), key: bytesOf(row.key_bytes) };
          groupKeys.set(sessionId, key);
          readKeys.set(sessionId, key);
        }
      }
      const createdKeys = new Map<string, DataKey>();
      const keyFor = (sessionId: string): DataKey | undefined => {
        if (groupKeys.has(sessionId)) return groupKeys.get(sessionId);
        if (!locked.has(sessionId)) return undefined;
        const key = keys.create();
        groupKeys.set(sessionId, key);
        createdKeys.set(sessionId, key);
        return key;
      };
      const lastSeqRead = new Map<string, number>();
      const appends: (MessageAppend<T> & { readonly sessionId: string })[] = [];
      const outcomes = group.map(({ sessionId, decide }): AppendOutcome<T> => {
        try {
          const append = decide(locked.get(sessionId), keyFor(sessionId));
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
      // Keys created for sessions none of whose messages was accepted are not worth a row.
      const newKeys = [...createdKeys].filter(([sessionId]) => finalState.has(sessionId));
      const writes: Statement[] = [
        ...(newKeys.length === 0
          ? []
          : [
              {
                sql: `INSERT INTO session_data_key (session_id, key_id, key_bytes, created_at_ms, erased_at_ms)
                      VALUES ${valueRows(newKeys.length, KEY_COLUMNS)}`,
                values: newKeys.flatMap(([sessionId, key]) => [sessionId, key.keyId, bufferOf(key.key), nowMs, null]),
              },
            ]),
        {
          sql: `INSERT INTO session_event (event_id, session_id, seq, type, payload, occurred_at_ms, traceparent, published_at_ms, lease_slot)
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
            relayLeaseSlot(sessionId),
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
          sql: "UPDATE session SET content_chars = ?, serialized_bytes = ?, last_seq = ?, last_event_at_ms = ? WHERE session_id = ? AND last_seq = ?",
          values: [
            session.contentChars,
            session.serializedBytes,
            event.seq,
            event.occurredAtMs,
            sessionId,
            lastSeqRead.get(sessionId),
          ],
        })),
        { sql: "COMMIT" },
      ];
      await sql.batch(writes);
      for (const [sessionId, key] of [...readKeys, ...newKeys]) {
        if (finalState.has(sessionId)) keys.remember(sessionId, key);
      }
      return outcomes;
    } catch (error) {
      await sql.run("ROLLBACK").catch(() => undefined);
      throw error;
    }
  });
}

function bytesOf(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new Error("session_data_key.key_bytes is not binary");
}

function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
