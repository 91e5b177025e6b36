// The "record" stage: compare this build's prefix fingerprint with the session's previous one and
// remember this one, durably, together with the PrefixEvents that report it (FingerprintObserved
// for every build, PrefixChanged when the prefix moved): the events are published if and only if
// the fingerprint row changed.
//
// Builds running at the same time are recorded together: one transaction per group instead of one
// per build (group commit), so a busy process pays well under one commit per build. A build is
// answered only after its group committed, so a crash can lose only the comparison of builds that
// were never answered. Rows are locked for the transaction and compared in arrival order, so
// concurrent builds of one session, in this process or another replica, each compare with the one
// before it. The fingerprint each session had last is also kept in memory (bounded), with the row
// version it was written at, so a comparison reads the stored fingerprint only when another
// process wrote the row since. For the sessions this process wrote last (every turn but a
// session's first here), the group is compared with that memory and written in one round trip
// instead of two: each row only if it is still at the remembered version, each event only if its
// row's write took. A row another replica moved sends its builds through the locked path.

import type { OutboxEntry } from "@prefix-guard/bus";
import { retryOnDeadlock, translateDbError } from "@prefix-guard/db";
import { cloudEventHeaders, Topics } from "@prefix-guard/events";
import { LruMap } from "@prefix-guard/lru";
import { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import type { ColdCache } from "../../domain/cold-cache";
import type { PrefixFingerprint } from "../../domain/fingerprint";
import { parseStoredFingerprint, storedFingerprintJson } from "../../domain/fingerprint";
import type { ChatRequest } from "../../domain/model";
import { costAfterBreak } from "../../domain/prefix-cost";
import {
  comparePrefix,
  type DateChangeExplanation,
  type PrefixComparison,
  type RulesChangeSentences,
  uncomparedPrefix,
} from "../../domain/prefix-monitor";
import type { FingerprintStore, PrefixRow, StoredPrefixHead } from "../ports";

export const PREFIX_EVENT_SCHEMA_VERSION = 1;

/** What a build hands its prefix memory. */
export interface PrefixRecord {
  readonly sessionId: string;
  readonly requestId: string;
  readonly fingerprint: PrefixFingerprint;
  readonly chatRequest: ChatRequest;
  readonly generation: number;
  /** The rules decision by name: a Resolve decision ("PINNED", "RETAINED" ...) or a rules source's own. */
  readonly rulesDecision: string;
  /** A rules source's own explanation of its decision (ResolvedRules.changeSentences). */
  readonly rulesChange?: RulesChangeSentences;
  /** The operator's reason when the rules were re-pinned after a refresh. */
  readonly rulesRefreshReason?: string;
  /** The gap that made the session's cache cold, when this build found it so (REPIN_WHEN_COLD). */
  readonly coldCache?: ColdCache;
  /** The build's effective workspace: the request's, or the session's own. */
  readonly workspace: string;
  /** Who the session belongs to, for cache-monitor's answers to a harness. */
  readonly scope: string;
  readonly owner: string;
  readonly droppedTurns: number;
  readonly anchorDate: string;
  readonly dateNotices: readonly string[];
  readonly estimatedTokens: number;
  readonly model: string;
  /** The date anchoring's own explanation of a changed current-date (DateAnchoring.explainDateChange). */
  readonly explainDateChange?: DateChangeExplanation;
}

/** The port: the product's durable memory, or a benchmark baseline's. */
export interface PrefixMemory {
  record(record: PrefixRecord): Promise<PrefixComparison>;
  /**
   * A compaction request: published as observed (so its usage can be joined by request id) but
   * never remembered as the session's prefix, which the next turn is compared with.
   */
  observeCompactionRequest(record: PrefixRecord): Promise<void>;
  /**
   * The sessions were removed or re-created: their next build is a first build, never compared
   * with what the old session sent.
   */
  forget(sessionIds: readonly string[]): Promise<void>;
  /** Records what is queued and stops taking more. */
  close(): Promise<void>;
  /**
   * The session's previous build, null when none is known. "remembered" answers from this process's
   * memory, without I/O: a build at least that recent happened, but another replica may have
   * recorded a later one. "stored" reads the stored row. Absent: never known (nothing is ever cold).
   */
  previousBuild?(sessionId: string, from: "remembered" | "stored"): Promise<RecordedBuild | null>;
}

/** When a build was recorded, and what its provider cache entry was written under. */
export interface RecordedBuild {
  readonly recordedAtMs: number;
  readonly model: string;
  /** The retention its body asked for; "" = none (the provider's default). */
  readonly cacheRetention: string;
}

function recordedBuild(recordedAtMs: number, fingerprint: PrefixFingerprint): RecordedBuild {
  return { recordedAtMs, model: fingerprint.model, cacheRetention: fingerprint.cacheRetention ?? "" };
}

/** What a session's previous build left: its fingerprint and the hints its explanation needs. */
export interface PreviousPrefix {
  readonly fingerprint: PrefixFingerprint | null;
  readonly generation: number;
  readonly droppedTurns: number;
  readonly anchorDate: string;
}

/** Compares `record` with `previous` and says what to publish about it. */
export function comparePrefixRecord(previous: PreviousPrefix | null, record: PrefixRecord): PrefixComparison {
  return comparePrefix(previous?.fingerprint ?? null, record.fingerprint, {
    compactionGenerationBefore: previous?.generation ?? null,
    compactionGenerationNow: record.generation,
    rulesDecision: record.rulesDecision,
    ...(record.rulesChange === undefined ? {} : { rulesChange: record.rulesChange }),
    ...(record.rulesRefreshReason === undefined ? {} : { rulesRefreshReason: record.rulesRefreshReason }),
    ...(record.coldCache === undefined ? {} : { coldCache: record.coldCache }),
    droppedTurnsBefore: previous?.droppedTurns ?? null,
    droppedTurnsNow: record.droppedTurns,
    anchorDateBefore: previous?.anchorDate ?? null,
    anchorDateNow: record.anchorDate,
    ...(record.explainDateChange === undefined ? {} : { explainDateChange: record.explainDateChange }),
  });
}

/** The FingerprintObserved of a compaction request (no comparison: it is not a turn). */
export function compactionObservedEvent(record: PrefixRecord, nowMs: number, newEventId: () => string): PrefixEvent {
  const [observed] = prefixEvents(record, NOT_COMPARED, null, nowMs, newEventId);
  if (observed?.payload?.$case !== "observed") throw new Error("FingerprintObserved expected");
  return { ...observed, payload: { $case: "observed", value: { ...observed.payload.value, compactionRequest: true } } };
}

const NOT_COMPARED: PrefixComparison = uncomparedPrefix("compaction request", false);

/** FingerprintObserved for every build, plus PrefixChanged when the prefix moved. */
export function prefixEvents(
  record: PrefixRecord,
  comparison: PrefixComparison,
  previous: PrefixFingerprint | null,
  nowMs: number,
  newEventId: () => string,
): PrefixEvent[] {
  const { sessionId, requestId, fingerprint } = record;
  const envelope = { sessionId, occurredAtMs: nowMs, schemaVersion: PREFIX_EVENT_SCHEMA_VERSION, requestId };
  const changed = comparison.changed && previous !== null;
  const events: PrefixEvent[] = [
    {
      ...envelope,
      eventId: newEventId(),
      type: "FingerprintObserved",
      payload: {
        $case: "observed",
        value: {
          sections: fingerprint.sections.map((section) => ({ ...section })),
          toolsHash: fingerprint.toolsHash,
          historyHash: fingerprint.historyHash,
          messages: fingerprint.messageHashes.length,
          firstBuild: comparison.firstBuild,
          rulesDecision: record.rulesDecision,
          dateNotices: [...record.dateNotices],
          anchorDate: record.anchorDate,
          estimatedTokens: record.estimatedTokens,
          model: record.model,
          compactionGeneration: record.generation,
          compactionRequest: false,
          workspace: record.workspace,
          cacheRetention: fingerprint.cacheRetention ?? "",
          scope: record.scope,
          owner: record.owner,
          // cache-monitor answers RecordUsage only once the PrefixChanged announced here is stored too.
          prefixChanged: changed,
        },
      },
    },
  ];
  if (changed) {
    const cost = costAfterBreak(previous, fingerprint, record.chatRequest, comparison);
    events.push({
      ...envelope,
      eventId: newEventId(),
      type: "PrefixChanged",
      payload: {
        $case: "changed",
        value: {
          changedSections: [...comparison.changedSections],
          toolsChanged: comparison.toolsChanged,
          toolsChangeKind: comparison.toolsChangeKind,
          historyRewritten: comparison.historyRewritten,
          cause: comparison.cause,
          bytesAfterBreak: cost.bytes,
          tokensAfterBreak: cost.tokens,
          messages: record.chatRequest.messages.length,
        },
      },
    });
  }
  return events;
}

export function prefixOutboxEntries(
  sessionId: string,
  events: readonly PrefixEvent[],
  headers: Readonly<Record<string, string>>,
  nowMs: number,
): OutboxEntry[] {
  return events.map((event) => ({
    topic: Topics.promptPrefix,
    key: sessionId,
    value: PrefixEvent.encode(event).finish(),
    headers: {
      "pg-event-type": event.type,
      ...cloudEventHeaders(Topics.promptPrefix, "prompt-assembly", event),
      ...headers,
    },
    nowMs,
  }));
}

interface Remembered extends PreviousPrefix {
  readonly version: number;
  readonly recordedAtMs: number;
}

interface GroupPlan {
  readonly comparisons: readonly PrefixComparison[];
  /** Every event of the group, in build order. */
  readonly events: readonly OutboxEntry[];
  readonly eventsOf: ReadonlyMap<string, readonly OutboxEntry[]>;
  readonly rows: readonly (PrefixRow & { readonly record: PrefixRecord })[];
}

interface Pending {
  readonly record: PrefixRecord;
  readonly headers: Readonly<Record<string, string>>;
  resolve(comparison: PrefixComparison): void;
  reject(error: unknown): void;
}

export interface DurablePrefixMemoryOptions {
  readonly store: FingerprintStore;
  readonly now: () => number;
  readonly newEventId: () => string;
  /** Trace headers of the build, stored with its events (read when the build records). */
  readonly traceHeaders: () => Readonly<Record<string, string>>;
  /** Builds recorded in one transaction at most. */
  readonly maxGroup?: number;
  /** Byte budget of the fingerprints remembered in memory. */
  readonly cacheBytes: number;
  readonly logger: { warn(fields: Record<string, unknown>, message: string): void };
}

function rememberedBytes({ fingerprint }: Remembered): number {
  // The message hashes are shared with the session view's memo; a pointer and a share of the
  // string each, plus the sections.
  return (fingerprint?.messageHashes.length ?? 0) * 100 + (fingerprint?.sections.length ?? 0) * 200 + 500;
}

export class DurablePrefixMemory implements PrefixMemory {
  private readonly queue: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private closed = false;
  /**
   * The row each session was last written at by this process. Only a write counts as a use (reads
   * peek): the sessions written longest ago go first.
   */
  private readonly remembered: LruMap<string, Remembered>;

  constructor(private readonly options: DurablePrefixMemoryOptions) {
    this.remembered = new LruMap({ maxWeight: options.cacheBytes, weigh: rememberedBytes });
  }

  record(record: PrefixRecord): Promise<PrefixComparison> {
    if (this.closed) return Promise.reject(new Error("prefix memory is closed"));
    return new Promise((resolve, reject) => {
      this.queue.push({ record, headers: this.options.traceHeaders(), resolve, reject });
      this.flushing ??= this.drain();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.flushing;
  }

  async forget(sessionIds: readonly string[]): Promise<void> {
    for (const sessionId of sessionIds) this.remembered.delete(sessionId);
    await this.options.store.forget(sessionIds);
  }

  async previousBuild(sessionId: string, from: "remembered" | "stored"): Promise<RecordedBuild | null> {
    if (from === "remembered") {
      const memory = this.remembered.peek(sessionId);
      return memory?.fingerprint == null ? null : recordedBuild(memory.recordedAtMs, memory.fingerprint);
    }
    const stored = await this.options.store.lastBuild(sessionId);
    const fingerprint = stored === null ? null : parseStoredFingerprint(stored.fingerprintJson);
    return stored === null || fingerprint === null ? null : recordedBuild(stored.recordedAtMs, fingerprint);
  }

  async observeCompactionRequest(record: PrefixRecord): Promise<void> {
    const nowMs = this.options.now();
    const event = compactionObservedEvent(record, nowMs, this.options.newEventId);
    try {
      await this.options.store.publish(
        prefixOutboxEntries(record.sessionId, [event], this.options.traceHeaders(), nowMs),
      );
    } catch (error) {
      throw translateDbError(error, { session_id: record.sessionId });
    }
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, this.options.maxGroup ?? 256);
        await this.recordGroup(group);
      }
    } finally {
      this.flushing = null;
    }
  }

  private async recordGroup(group: readonly Pending[]): Promise<void> {
    const rest = this.options.store.writesIfUnchanged ? await this.recordRemembered(group) : group;
    if (rest.length > 0) await this.recordLocked(rest);
  }

  /**
   * The builds of sessions this process wrote last, compared with what it remembers and written in
   * one round trip, each row only if it is still at the remembered version. Answers those builds
   * and returns the rest (sessions it does not remember, or whose row another replica wrote since),
   * in arrival order, for recordLocked.
   */
  private async recordRemembered(group: readonly Pending[]): Promise<readonly Pending[]> {
    const candidates = group.filter((pending) => this.remembered.has(pending.record.sessionId));
    if (candidates.length === 0) return group;
    const stored = new Map<string, number>();
    const previous = new Map<string, PreviousPrefix>();
    for (const { record } of candidates) {
      const memory = this.remembered.peek(record.sessionId) as Remembered;
      stored.set(record.sessionId, memory.version);
      previous.set(record.sessionId, memory);
    }
    const nowMs = this.options.now();
    const plan = this.planGroup(candidates, previous, (sessionId) => stored.get(sessionId) ?? 0, nowMs);
    let written: Set<string>;
    try {
      written = await retryOnDeadlock(() =>
        this.options.store.writeIfUnchanged(
          plan.rows.map((row) => ({
            row,
            storedVersion: stored.get(row.sessionId) ?? 0,
            events: plan.eventsOf.get(row.sessionId) ?? [],
          })),
          nowMs,
        ),
      );
    } catch (error) {
      this.fail(candidates, error);
      return group.filter((pending) => !stored.has(pending.record.sessionId));
    }
    this.rememberWritten(plan.rows, written, nowMs);
    candidates.forEach((pending, index) => {
      if (written.has(pending.record.sessionId)) pending.resolve(plan.comparisons[index] as PrefixComparison);
    });
    // Another replica wrote these rows since: recordLocked reads what it left.
    for (const sessionId of stored.keys()) if (!written.has(sessionId)) this.remembered.delete(sessionId);
    return group.filter((pending) => !written.has(pending.record.sessionId));
  }

  /** A group in one transaction that locks its rows and reads the previous fingerprints it does not remember. */
  private async recordLocked(group: readonly Pending[]): Promise<void> {
    const { store } = this.options;
    const sessionIds = [...new Set(group.map((pending) => pending.record.sessionId))];
    try {
      const nowMs = this.options.now();
      // A remembered session has its row already (or had it deleted with the session, when the
      // upsert simply creates it again).
      const unknown = sessionIds.filter((id) => !this.remembered.has(id));
      // A deadlock (replicas locking shared sessions) rolled the group back whole: decide again.
      const plan = await retryOnDeadlock(() =>
        store.recordGroup(sessionIds, unknown, nowMs, async (heads, readFingerprints) => {
          const previous = await this.previousOf(heads, readFingerprints);
          const planned = this.planGroup(group, previous, (sessionId) => heads.get(sessionId)?.version ?? 0, nowMs);
          return { write: { rows: planned.rows, events: planned.events }, result: planned };
        }),
      );
      this.rememberWritten(plan.rows, new Set(sessionIds), nowMs);
      group.forEach((pending, index) => {
        pending.resolve(plan.comparisons[index] as PrefixComparison);
      });
    } catch (error) {
      this.fail(group, error);
    }
  }

  /**
   * Each build compared with the one before it (the previous build of its session in this group,
   * or `previous`), the events that report it, and each session's new row: its last build, one
   * version further per build of the group.
   */
  private planGroup(
    group: readonly Pending[],
    previous: Map<string, PreviousPrefix>,
    storedVersionOf: (sessionId: string) => number,
    nowMs: number,
  ): GroupPlan {
    const comparisons: PrefixComparison[] = [];
    const events: OutboxEntry[] = [];
    const eventsOf = new Map<string, OutboxEntry[]>();
    const latest = new Map<string, { record: PrefixRecord; version: number }>();
    for (const { record, headers } of group) {
      const before = previous.get(record.sessionId) ?? null;
      const comparison = comparePrefixRecord(before, record);
      comparisons.push(comparison);
      const published = prefixEvents(record, comparison, before?.fingerprint ?? null, nowMs, this.options.newEventId);
      const entries = prefixOutboxEntries(record.sessionId, published, headers, nowMs);
      events.push(...entries);
      eventsOf.set(record.sessionId, [...(eventsOf.get(record.sessionId) ?? []), ...entries]);
      const version = (latest.get(record.sessionId)?.version ?? storedVersionOf(record.sessionId)) + 1;
      latest.set(record.sessionId, { record, version });
      previous.set(record.sessionId, {
        fingerprint: record.fingerprint,
        generation: record.generation,
        droppedTurns: record.droppedTurns,
        anchorDate: record.anchorDate,
      });
    }
    const rows = [...latest].map(([sessionId, { record, version }]) => ({
      sessionId,
      version,
      fingerprintJson: storedFingerprintJson(record.fingerprint),
      generation: record.generation,
      droppedTurns: record.droppedTurns,
      anchorDate: record.anchorDate,
      requestId: record.requestId,
      record,
    }));
    return { comparisons, events, eventsOf, rows };
  }

  /** Remembers the rows of `written` sessions as this process wrote them, at `nowMs`. */
  private rememberWritten(rows: GroupPlan["rows"], written: ReadonlySet<string>, nowMs: number): void {
    for (const { sessionId, record, version } of rows) {
      if (!written.has(sessionId)) continue;
      this.remembered.set(sessionId, {
        fingerprint: record.fingerprint,
        generation: record.generation,
        droppedTurns: record.droppedTurns,
        anchorDate: record.anchorDate,
        version,
        recordedAtMs: nowMs,
      });
    }
  }

  /** Nothing of these builds was stored; each fails and the harness may retry it. */
  private fail(group: readonly Pending[], error: unknown): void {
    for (const { record } of group) this.remembered.delete(record.sessionId);
    const translated = translateDbError(error);
    for (const pending of group) pending.reject(translated);
  }

  /** The previous prefix of each session: from memory when its version is still the stored one. */
  private async previousOf(
    heads: ReadonlyMap<string, StoredPrefixHead>,
    readFingerprints: (sessionIds: readonly string[]) => Promise<Map<string, string>>,
  ): Promise<Map<string, PreviousPrefix>> {
    const previous = new Map<string, PreviousPrefix>();
    const unread: string[] = [];
    for (const [sessionId, head] of heads) {
      if (!head.hasFingerprint) continue;
      const memory = this.remembered.peek(sessionId);
      if (memory !== undefined && memory.version === head.version) previous.set(sessionId, memory);
      else unread.push(sessionId);
    }
    const stored = await readFingerprints(unread);
    for (const sessionId of unread) {
      const head = heads.get(sessionId) as StoredPrefixHead;
      const fingerprint = parseStoredFingerprint(stored.get(sessionId) ?? "");
      if (fingerprint === null) {
        this.options.logger.warn(
          { session_id: sessionId },
          `stored prefix fingerprint unreadable session=${sessionId}`,
        );
      }
      previous.set(sessionId, {
        fingerprint,
        generation: head.generation,
        droppedTurns: head.droppedTurns,
        anchorDate: head.anchorDate,
      });
    }
    return previous;
  }
}
