// The stores prompt-assembly's application reads and writes through, in the shapes it works with:
// the session projection (SessionProjection, SessionViews) and the last prefix fingerprint per
// session (DurablePrefixMemory). adapters/mysql implements them (projection-store.ts,
// fingerprint-store.ts); no column name or driver type appears here.

import type { OutboxEntry } from "@prefix-guard/bus";
import type { StoredMessage } from "../domain/model";
import type { ProjectedSession } from "../domain/session-projection";

/** Everything one batch of events changes for one session, folded in event order. */
export interface SessionWrite {
  readonly sessionId: string;
  /** The session row after the batch. */
  readonly session: ProjectedSession;
  /** Remove every stored message first (SessionCreated over an old id, a tombstone). */
  readonly dropStored: boolean;
  /** Ids of already stored messages to flag as deleted. */
  readonly flagStored: readonly string[];
  readonly insert: readonly StoredMessage[];
  readonly lastSeq: number;
}

/** Operations inside one projection transaction. */
export interface ProjectionTransaction {
  /** Applied positions of the sessions, locked until commit. */
  lockPositions(sessionIds: readonly string[]): Promise<Map<string, number>>;
  readSessions(sessionIds: readonly string[]): Promise<Map<string, ProjectedSession>>;
  write(writes: readonly SessionWrite[], nowMs: number): Promise<void>;
}

/** The stored projection of each session and this consumer's position in it. */
export interface ProjectionStore {
  /** The session and its messages up to its last_seq, as of one moment; null when the session is not projected. */
  readView(sessionId: string): Promise<{ session: ProjectedSession; messages: StoredMessage[] } | null>;
  /** Last seq applied for the session; 0 when none. */
  position(sessionId: string): Promise<number>;
  /** Position rows for sessions about to see their first event, created before the transaction that locks them. */
  ensurePositions(sessionIds: readonly string[], nowMs: number): Promise<void>;
  transaction<T>(work: (tx: ProjectionTransaction) => Promise<T>): Promise<T>;
  /** Operator repair: forgets everything projected for the session, position included. */
  forgetSession(sessionId: string): Promise<void>;
}

/** A stored fingerprint row without its (large) fingerprint. */
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

/** A row to write only if it is still at the version this process last wrote it at, and its events. */
export interface ConditionalPrefixWrite {
  readonly row: PrefixRow;
  readonly storedVersion: number;
  readonly events: readonly OutboxEntry[];
}

/** What one group of builds writes: the new rows and the PrefixEvents that report them. */
export interface PrefixGroupWrite {
  readonly rows: readonly PrefixRow[];
  readonly events: readonly OutboxEntry[];
}

/** The last prefix fingerprint of each session, written together with the PrefixEvents that report it. */
export interface FingerprintStore {
  /**
   * One transaction for a group of builds: creates the rows of `unknownSessionIds` and locks every
   * session's row; once `decide` has compared, writes what it returns and commits. `decide` may also
   * read stored fingerprints it does not remember.
   */
  recordGroup<T>(
    sessionIds: readonly string[],
    unknownSessionIds: readonly string[],
    nowMs: number,
    decide: (
      heads: ReadonlyMap<string, StoredPrefixHead>,
      readFingerprints: (sessionIds: readonly string[]) => Promise<Map<string, string>>,
    ) => Promise<{ write: PrefixGroupWrite; result: T }>,
  ): Promise<T>;
  /** Whether writeIfUnchanged is available. */
  readonly writesIfUnchanged: boolean;
  /**
   * Writes each row only if it is still at `storedVersion`, and its events only if its row's write
   * took, in one transaction. Returns the sessions written.
   */
  writeIfUnchanged(writes: readonly ConditionalPrefixWrite[], nowMs: number): Promise<Set<string>>;
  /** Removes the sessions' last fingerprints (sessions removed or re-created). */
  forget(sessionIds: readonly string[]): Promise<void>;
  /** PrefixEvents that change no row (a compaction request's observation). */
  publish(events: readonly OutboxEntry[]): Promise<void>;
  /** When the session's last build was recorded, with its fingerprint JSON; null when none was. */
  lastBuild(sessionId: string): Promise<{ recordedAtMs: number; fingerprintJson: string } | null>;
}
