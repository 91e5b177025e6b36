// The store session-events' application writes and reads through, in the shapes it works with:
// the domain's session and message state and the contract's messages. adapters/mysql implements
// it (session-store.ts, message-append.ts); no column name or driver type appears here.

import type { SessionOwnership } from "@prefix-guard/access";
import type { DataKey } from "@prefix-guard/events";
import type { ContentPart } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import type { Session, StoredMessage } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import type { MessageState, SessionKindName, SessionState } from "../domain/model";

/** A session's data key as stored: `erased` once the session was erased (the key bytes are gone then). */
export type StoredDataKey = { readonly erased: false; readonly key: DataKey } | { readonly erased: true };

/** A stored event as the erasure rewrites it. */
export interface StoredEventPayload {
  readonly id: number;
  readonly payload: Uint8Array;
}

/** An event as it is appended: the encoded envelope and what the relay needs beside it. */
export interface EventRow {
  readonly eventId: string;
  readonly seq: number;
  readonly type: string;
  readonly payload: Uint8Array;
  readonly occurredAtMs: number;
  readonly traceparent: string | null;
}

export interface NewSession {
  readonly sessionId: string;
  readonly owner: string;
  readonly workspace: string;
  readonly timezone: string;
  readonly kind: SessionKindName;
  readonly parentSessionId: string | undefined;
  readonly summary: string;
  readonly inheritedSummaryFrom: string | undefined;
  readonly createdAtMs: number;
  readonly locale: string;
  readonly scope: string;
  /** The principal that created it: its session quota counts its live sessions. */
  readonly createdBy: string;
}

/** What a write changes on the session row besides last_seq. */
export interface SessionChanges {
  readonly contentChars?: number;
  readonly compactionGeneration?: number;
  readonly compactionBoundaryMessageId?: string;
  readonly summary?: string;
  readonly deleted?: boolean;
  readonly ended?: boolean;
  /** occurred_at_ms of the event appended: the session's last activity, which retention looks at. */
  readonly lastEventAtMs?: number;
}

export interface NewCompaction {
  readonly sessionId: string;
  readonly generation: number;
  readonly boundaryMessageId: string;
  readonly summary: string;
  readonly committedAtMs: number;
}

/** One message appended by SaveMessage: its event, its row, and the session's counters after it. */
export interface MessageAppend<T> {
  readonly event: EventRow;
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

/**
 * Decides one message on its locked session (as the group's earlier messages left it), sealing
 * its content with the session's data key (undefined when the session is missing or its key was erased).
 */
export type DecideAppend<T> = (session: SessionState | undefined, key: DataKey | undefined) => MessageAppend<T>;

/** Where a group's data keys come from and go to. */
export interface AppendKeys {
  /** The key when this process already holds it: no statement then. */
  cached(sessionId: string): DataKey | undefined;
  /** A key for a session that has none (created before keys existed). */
  create(): DataKey;
  /** After the commit: the keys read or created by the group, for the sessions it wrote to. */
  remember(sessionId: string, key: DataKey): void;
}

/** What became of each message of a group: its result, or what its `decide` threw (nothing of it was written). */
export type AppendOutcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: unknown };

/** One write transaction. Every method runs inside it. */
export interface SessionTransaction {
  /** With `lock`, the row stays locked (FOR UPDATE on MySQL) until the transaction ends. */
  readSession(sessionId: string, lock: boolean): Promise<SessionState | undefined>;
  readMessage(messageId: string): Promise<MessageState | undefined>;
  /** The content of the session's user messages, oldest first. */
  userMessageContents(sessionId: string): Promise<ContentPart[][]>;
  /** Inserts the session at seq 1 and returns it as the contract shows it. */
  insertSession(session: NewSession): Promise<Session>;
  /** Live sessions a principal created: what its session quota is checked against. */
  countLiveSessionsCreatedBy(principal: string): Promise<number>;
  appendEvent(sessionId: string, event: EventRow): Promise<void>;
  flagMessageDeleted(messageId: string): Promise<void>;
  insertCompaction(compaction: NewCompaction): Promise<void>;
  /**
   * Moves last_seq from the seq the decision was based on to `seq`. False when the row had already
   * moved (another writer won), and then nothing was changed.
   */
  advanceSession(session: SessionState, seq: number, changes: SessionChanges): Promise<boolean>;
  /** The session's data key, read in this transaction (the session row is locked by the caller). */
  readDataKey(sessionId: string): Promise<StoredDataKey | undefined>;
  insertDataKey(sessionId: string, key: DataKey, createdAtMs: number): Promise<void>;
  /**
   * Destroys the session's key. A session from before keys existed gets an erased key too, so
   * GetDataKeys answers "erased" for it.
   */
  eraseDataKey(sessionId: string, nowMs: number): Promise<void>;
  blankSummary(sessionId: string): Promise<void>;
  /** Deletes the session's messages (thinking text included) and compactions (their summaries). */
  deleteContentRows(sessionId: string): Promise<void>;
  /** The session's event rows after row id `afterId`, in id order, `limit` at most. */
  eventPayloads(sessionId: string, afterId: number, limit: number): Promise<StoredEventPayload[]>;
  /** Rewrites the payload of these event rows; id, seq, type and published state stay. */
  replaceEventPayloads(rows: readonly StoredEventPayload[]): Promise<void>;
}

/** What SessionCommands reads and writes. */
export interface SessionStore {
  transaction<T>(work: (tx: SessionTransaction) => Promise<T>): Promise<T>;
  /**
   * SaveMessage for a group of messages in one transaction; each `decide` sees its session locked,
   * after the group's earlier messages. A `decide` that throws refuses only its own message; a
   * database error rolls the whole group back and is thrown.
   */
  appendMessages<T>(
    group: readonly { sessionId: string; decide: DecideAppend<T> }[],
    keys: AppendKeys,
    nowMs: number,
  ): Promise<AppendOutcome<T>[]>;
  readSession(sessionId: string): Promise<SessionState | undefined>;
  /** The session as the contract shows it, deleted ones included, with the scope that decides who sees it. */
  getSession(sessionId: string): Promise<(Session & { readonly scope: string }) | undefined>;
  /** The stored keys of these sessions (those without a row are absent). */
  readDataKeys(sessionIds: readonly string[]): Promise<Map<string, StoredDataKey>>;
  /** After an erasure committed: no copy of the erased rows may stay behind in the database's files. */
  flushErasure(): Promise<void>;
  listMessages(sessionId: string, includeDeleted: boolean): Promise<StoredMessage[]>;
  /**
   * Events after `afterSeq`, oldest first, never past the last_seq reported with them; undefined
   * when the session does not exist.
   */
  readEventPage(
    sessionId: string,
    afterSeq: number,
    limit: number,
  ): Promise<{ events: SessionEvent[]; lastSeq: number; ownership: SessionOwnership } | undefined>;
}
