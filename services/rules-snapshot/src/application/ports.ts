// What rules-snapshot's application reads and writes through: the snapshot store
// (adapters/mysql/snapshot-store.ts) and the rules-file reader (adapters/fs/agents-md-reader.ts).
// No column name or driver type appears here.

import type { ApplyOutcome } from "@prefix-guard/db";
import type { PinnedSnapshot, SnapshotRow } from "../domain/model";

/**
 * An open transaction of the snapshot store, as the application holds it: passed back to the store
 * and the event sink, never looked into (only the adapter that opened it knows what it is).
 */
export type SnapshotTransaction = { readonly __brand: "SnapshotTransaction" };

/**
 * The per-session snapshots and pending operator refreshes. A method given a transaction runs in
 * it; one given none runs on its own. Failures are typed errors (UnavailableError for an
 * unreachable database).
 */
export interface SnapshotStore {
  transaction<T>(work: (tx: SnapshotTransaction) => Promise<T>): Promise<T>;
  /** Runs `apply` and moves the consumer's position for the session in one transaction. */
  applyInSessionOrder(
    args: { consumer: string; sessionId: string; seq: number; nowMs: number; applyAcrossGap?: boolean },
    apply: (tx: SnapshotTransaction) => Promise<void>,
  ): Promise<ApplyOutcome>;
  /** Calls `listener` once `tx` has committed; never after a rollback. */
  afterCommit(tx: SnapshotTransaction, listener: () => void): void;
  findBySession(sessionId: string, tx?: SnapshotTransaction): Promise<SnapshotRow | null>;
  /** The rows of these sessions (a session without one is absent), read outside any transaction. */
  findBySessions(sessionIds: readonly string[]): Promise<ReadonlyMap<string, SnapshotRow>>;
  /**
   * Insert-or-overwrite: concurrent first resolves of a session leave one row, and an overwrite
   * rewrites every column, workspace included, and clears the report mark (seed 001 §4.2 评审补充).
   */
  upsert(snapshot: PinnedSnapshot, nowMs: number, tx?: SnapshotTransaction): Promise<void>;
  /** Remembers an operator's refresh until the session's next pin (one per session: the latest wins). */
  rememberRefresh(sessionId: string, reason: string, nowMs: number, tx: SnapshotTransaction): Promise<void>;
  /** The refresh waiting for this session's next pin, removed as it is read (inside the pin's transaction). */
  takeRefresh(sessionId: string, tx: SnapshotTransaction): Promise<{ reason: string } | null>;
  forgetRefresh(sessionId: string, tx: SnapshotTransaction): Promise<void>;
  /** @returns the number of rows removed (0 or 1). */
  deleteBySession(sessionId: string, tx?: SnapshotTransaction): Promise<number>;
  /** Deletes the row only if it was pinned under a generation older than `generation`. */
  deleteOlderThanGeneration(sessionId: string, generation: number, tx?: SnapshotTransaction): Promise<number>;
  /**
   * Records `diskHash` as reported while the row still holds `pinnedHash` and has not reported it yet.
   * @returns true if this call made the mark, false if someone already did (or the row changed).
   */
  markReported(
    sessionId: string,
    diskHash: string,
    pinnedHash: string,
    nowMs: number,
    tx?: SnapshotTransaction,
  ): Promise<boolean>;
}

export interface AgentsMdRead {
  /** '' when the file does not exist. */
  readonly text: string;
  /** null when the file does not exist. */
  readonly mtimeMs: number | null;
  /** The file is larger than the cap and `text` is only its head (possibly cut mid-line). */
  readonly truncated: boolean;
  /**
   * Why nothing was read, when the path names no readable file here: "not found" or "not a regular
   * file". Never an OS error code: this reaches the caller as a warning.
   */
  readonly missing?: string;
}

/**
 * Reads a file source named by a Resolve for `workspace`, confined to it: a refused path throws a
 * ValidationError, a missing file is an empty read.
 */
export type RulesFileReader = (path: string, workspace: string) => Promise<AgentsMdRead>;
