// The store cache-monitor's application reads and writes through, and the stored shapes it
// returns. adapters/mysql implements it (monitor-store.ts and the usage, observation and collapse
// stores it holds, decoding rows in monitor-rows.ts); no column name or driver type appears here.

import type { SessionOwnership } from "@prefix-guard/access";
import type { CollapseExplanation, CollapseFacts } from "../domain/call-assessment";
import type { CauseTotal, SectionTotal } from "../domain/collapse-totals";
import type {
  ChangedBlockRef,
  EarlierCall,
  PrefixChange,
  PrefixJoin,
  TrafficSource,
  UsageFacts,
} from "../domain/model";
import type { AdvisedCall } from "../domain/retention-advisor";

/**
 * An open transaction of the monitor's store, as the application holds it: passed back to the
 * store and the event sink, never looked into (only the adapter that opened it knows what it is).
 */
export type MonitorTransaction = { readonly __brand: "MonitorTransaction" };

export type UsageSource = "rpc" | "topic";

export interface StoredUsage extends UsageFacts {
  readonly id: number;
  readonly eventId: string;
  readonly sessionId: string;
  readonly cost: number;
  /** The price book's currency when the call was priced; "" for rows stored before it was recorded. */
  readonly currency: string;
  readonly source: UsageSource;
  readonly recordedAtMs: number;
  /** RecordUsage's idempotency key; null for a usage from llm.usage.v1 or stored before keys. */
  readonly idempotencyKey: string | null;
  /** null for a usage from llm.usage.v1 or stored before keys. */
  readonly contentSha256: string | null;
  readonly providerResponseId: string;
  readonly unbuilt: boolean;
}

export interface StoredCollapse {
  readonly id: number;
  readonly usageId: number;
  readonly sessionId: string;
  readonly requestId: string;
  readonly model: string;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly cachedShare: number;
  readonly baselineShare: number;
  readonly cost: number;
  readonly expectedCost: number;
  readonly extraCost: number;
  readonly changedSections: string[];
  readonly toolsChanged: boolean;
  readonly historyRewritten: boolean;
  readonly ourVerdict: string;
  readonly cause: string;
  readonly attribution: string;
  readonly providerCacheMissReason: string;
  /** "" for a collapse stored before cause codes existed. */
  readonly causeCode: string;
  readonly causeDisagreement: string;
  /** Who observed the request (absent on rows read before it was stored: our builds). */
  readonly trafficSource?: TrafficSource;
  /** The gateway change's first changed block and the byte where the request diverged; null: none. */
  readonly firstChangedBlock?: ChangedBlockRef | null;
  readonly divergedOffset?: number | null;
  readonly calledAtMs: number;
  readonly detectedAtMs: number;
  readonly updatedAtMs: number;
}

/** A gateway observation's request cut into cache order (FingerprintObserved.cut). */
export interface StoredCut {
  readonly blocks: readonly {
    readonly index: number;
    readonly kind: string;
    readonly role: string;
    readonly sha256: string;
    readonly bytes: number;
    readonly offset: number;
  }[];
  readonly totalBytes: number;
}

export interface SectionHashRecord {
  readonly key: string;
  readonly sha256: string;
  readonly chars: number;
}

export interface StoredObservation {
  readonly eventId: string;
  readonly sessionId: string;
  readonly requestId: string;
  readonly occurredAtMs: number;
  readonly sections: SectionHashRecord[];
  readonly toolsHash: string;
  readonly historyHash: string;
  readonly messages: number;
  readonly firstBuild: boolean;
  readonly rulesDecision: string;
  readonly dateNotices: string[];
  readonly anchorDate: string;
  readonly estimatedTokens: number;
  readonly model: string;
  readonly compactionGeneration: number;
  /** A BuildCompactionRequest, not a turn. */
  readonly compactionRequest: boolean;
  /** The build's effective workspace ("" from builders that did not say). */
  readonly workspace: string;
  /** The retention the build asked for ("" = the provider's default). */
  readonly cacheRetention: string;
  /** Who the session belongs to ("" from builders that did not say). */
  readonly scope: string;
  readonly owner: string;
  /** The build said a PrefixChanged of it follows (true) or none does (false); null: it did not say. */
  readonly prefixChanged: boolean | null;
  /** Who observed the request; absent = our builds. */
  readonly trafficSource?: TrafficSource;
  /** The gateway's cut of the request; absent or null for our builds (they have sections). */
  readonly cut?: StoredCut | null;
}

export interface StoredChange extends PrefixChange {
  /** Who observed the request; absent = our builds. */
  readonly trafficSource?: TrafficSource;
  readonly eventId: string;
  readonly sessionId: string;
  readonly requestId: string;
  readonly occurredAtMs: number;
  readonly changedSections: string[];
  readonly bytesAfterBreak: number;
  readonly tokensAfterBreak: number;
  readonly messages: number;
}

export interface NewUsage {
  readonly eventId: string;
  readonly sessionId: string;
  readonly usage: UsageFacts;
  readonly cost: number;
  readonly currency: string;
  readonly source: UsageSource;
  readonly recordedAtMs: number;
  /** RecordUsage's identity; absent for a usage consumed from llm.usage.v1. */
  readonly identity?: {
    readonly idempotencyKey: string;
    readonly contentSha256: string;
    readonly providerResponseId: string;
    readonly unbuilt: boolean;
  };
}

export interface CollapseQuery {
  /** Window start (UTC ms, inclusive) on called_at_ms; 0 = everything kept. */
  readonly sinceMs: number;
  readonly sessionId: string | null;
}

export interface CollapseTotalsRow {
  readonly sections: SectionTotal[];
  readonly causes: CauseTotal[];
  readonly totalCollapses: number;
  readonly totalExtraCost: number;
}

/** The raw material of TraceSession: each input of one session, most recent first. */
export interface SessionTraceRows {
  readonly observations: StoredObservation[];
  readonly changes: StoredChange[];
  readonly usages: StoredUsage[];
  readonly collapses: StoredCollapse[];
}

/**
 * How much of a build's record has arrived: nothing; its FingerprintObserved, but not yet the
 * PrefixChanged it said follows; or all of it (an observation that announced no PrefixChanged, or
 * did not say, is all there is until a PrefixChanged arrives).
 */
export type BuildArrival = "none" | "awaiting_change" | "complete";

/** Recorded usages, inside the session's lock. */
export interface UsageRecords {
  findUsageByEventId(tx: MonitorTransaction, eventId: string): Promise<StoredUsage | null>;
  /** @returns the stored usage's id. */
  insertUsage(tx: MonitorTransaction, usage: NewUsage): Promise<number>;
  /**
   * The session's calls before a point in call order — (called_at_ms, id) — oldest first, at most
   * `limit` of them. `before.id` null means "a call not stored yet": ties on called_at_ms count as earlier.
   */
  earlierCalls(
    tx: MonitorTransaction,
    sessionId: string,
    before: { readonly calledAtMs: number; readonly id: number | null },
    limit: number,
  ): Promise<EarlierCall[]>;
}

/** What prompt-assembly (or the gateway) observed of each build, inside the session's lock. */
export interface ObservationRecords {
  /** What was observed of a request so far: its first observation and first change, if any. */
  prefixJoin(tx: MonitorTransaction, sessionId: string, requestId: string): Promise<PrefixJoin>;
  /** @returns false when the event was stored already (a redelivery). */
  insertObservation(tx: MonitorTransaction, observation: StoredObservation, receivedAtMs: number): Promise<boolean>;
  /** @returns false when the event was stored already (a redelivery). */
  insertChange(tx: MonitorTransaction, change: StoredChange, receivedAtMs: number): Promise<boolean>;
}

/** Detected collapses: written inside the session's lock, listed and totalled outside it. */
export interface CollapseRecords {
  findCollapseByUsage(tx: MonitorTransaction, usageId: number): Promise<StoredCollapse | null>;
  insertCollapse(
    tx: MonitorTransaction,
    args: { usageId: number; sessionId: string; usage: UsageFacts; facts: CollapseFacts; nowMs: number },
  ): Promise<StoredCollapse>;
  /** The collapses of calls that sent this request's body, each with its usage. */
  collapsesOfRequest(
    tx: MonitorTransaction,
    sessionId: string,
    requestId: string,
  ): Promise<Array<{ collapse: StoredCollapse; usage: StoredUsage }>>;
  /** Rewrites what the prefix join decides (sections, cause, attribution), keeping the detection. */
  updateCollapseExplanation(
    tx: MonitorTransaction,
    collapse: StoredCollapse,
    explanation: CollapseExplanation,
    nowMs: number,
  ): Promise<StoredCollapse>;
  listCollapses(query: CollapseQuery, limit: number): Promise<StoredCollapse[]>;
  /** Window totals: every collapse once, every section it is counted under once. */
  collapseTotals(query: CollapseQuery): Promise<CollapseTotalsRow>;
}

/** cache-monitor's store. Failures are typed errors (UnavailableError for an unreachable or deadlocked database). */
export interface MonitorStore {
  readonly usages: UsageRecords;
  readonly observations: ObservationRecords;
  readonly collapses: CollapseRecords;
  /**
   * Runs `work` in a transaction holding the session's lock, so the usage and prefix writers of one
   * session see each other's committed rows and never join against half of them.
   */
  withSessionLock<T>(sessionId: string, nowMs: number, work: (tx: MonitorTransaction) => Promise<T>): Promise<T>;
  /** How much of the record of this build has been stored (BuildArrival). */
  buildArrival(sessionId: string, requestId: string): Promise<BuildArrival>;
  /** A usage already stored under this event id, read outside any session lock (a retry's fast path). */
  storedUsage(eventId: string): Promise<StoredUsage | null>;
  /** The session's last `limit` rows of each input. */
  sessionTrace(sessionId: string, limit: number): Promise<SessionTraceRows>;
  /** Who the session belongs to, from its observed builds (null: none observed). */
  sessionOwnership(sessionId: string): Promise<SessionOwnership | null>;
  /** The session's last `limit` calls, oldest first, for the retention advisor. */
  sessionCalls(sessionId: string, limit: number): Promise<AdvisedCall[]>;
  /**
   * The calls of the sessions built in `workspace` (at most `maxSessions`, most recently built
   * first; only `scope`'s when given), each session's last `limit`, grouped by session, oldest first within each.
   */
  workspaceCalls(workspace: string, limit: number, maxSessions: number, scope?: string): Promise<AdvisedCall[]>;
}
