// Seed 001 §4.2 (read/write path) plus snapshot fencing (README.md, Architecture → Guarantees → "Snapshot fencing"): given the
// stored row and what was read this round, decide what to inject and what to write. Pure: the
// application layer runs the action, the log lines and the event.

import { changedOnDiskLogLine, emptyOnDiskLogLine, invalidatedLogLine, pinnedLogLine } from "./log-lines";
import type { PinnedSnapshot, PinReason, RawRules, ResolutionDecision, RulesEventPayload, SnapshotRow } from "./model";
import { invalidatedPayload, pinnedPayload, retainedChangedPayload, retainedEmptyPayload } from "./snapshot-events";

export interface ResolutionInput {
  readonly sessionId: string;
  readonly existing: SnapshotRow | null;
  /** The session's current effective workspace. */
  readonly workspace: string;
  readonly raw: RawRules;
  /** The session's current compaction generation as the caller knows it. */
  readonly callerGeneration: number;
  readonly embed: boolean;
  /**
   * The caller says the session's provider cache is cold (ResolveRequest.cache_cold, REPIN_WHEN_COLD):
   * a snapshot held back from a changed disk no longer protects any cached prefix.
   */
  readonly cacheCold: boolean;
}

export type SnapshotAction =
  | { readonly kind: "none" }
  /** No row was seen. Written as insert-or-overwrite: a concurrent first resolve may have inserted meanwhile. */
  | { readonly kind: "insert"; readonly snapshot: PinnedSnapshot }
  /** Every column is rewritten (§4.2 评审补充: never a no-op upsert) and the report mark is cleared. */
  | { readonly kind: "overwrite"; readonly snapshot: PinnedSnapshot }
  /** `belowGeneration` set: delete only while the row is still older than that generation. */
  | { readonly kind: "delete"; readonly belowGeneration: number | null }
  /** Remember `diskHash` as reported, only while the row still holds `pinnedHash`. */
  | { readonly kind: "markReported"; readonly diskHash: string; readonly pinnedHash: string };

export interface ResolutionPlan {
  readonly decision: ResolutionDecision;
  /** Exactly what is injected; '' means no section. */
  readonly sectionText: string;
  /** Hash of `sectionText`; '' when there is no section. */
  readonly rulesHash: string;
  /** Generation of the snapshot in effect; 0 when none. */
  readonly pinnedGeneration: number;
  readonly action: SnapshotAction;
  /**
   * Info lines (seed §4.7) and the rules.snapshot.v1 payload. For `delete` and `markReported` they are
   * due only if the action changed a row: a concurrent resolver or the consumer may have done it first,
   * and reporting twice is what the once-per-hash rule forbids.
   */
  readonly logLines: readonly string[];
  readonly event: RulesEventPayload | null;
  /** The operator's reason, on REPINNED_OPERATOR_REFRESH; '' otherwise. */
  readonly refreshReason: string;
}

function isInvalidRow(row: SnapshotRow, workspace: string): boolean {
  return row.workspace !== workspace || row.rulesText.trim().length === 0;
}

function pinPlan(
  input: ResolutionInput,
  decision: ResolutionDecision,
  reason: PinReason,
  action: "insert" | "overwrite",
  generation: number = input.callerGeneration,
): ResolutionPlan {
  const snapshot: PinnedSnapshot = {
    sessionId: input.sessionId,
    workspace: input.workspace,
    rulesText: input.raw.sectionText,
    rulesHash: input.raw.rawHash,
    sourcePath: input.raw.sourcePath,
    sourceMtimeMs: input.raw.sourceMtimeMs,
    generation,
  };
  const pinned = pinnedLogLine({
    sessionId: input.sessionId,
    chars: snapshot.rulesText.length,
    sourcePath: snapshot.sourcePath,
    sourceMtimeMs: snapshot.sourceMtimeMs,
  });
  return {
    decision,
    sectionText: snapshot.rulesText,
    rulesHash: snapshot.rulesHash,
    pinnedGeneration: snapshot.generation,
    action: action === "insert" ? { kind: "insert", snapshot } : { kind: "overwrite", snapshot },
    logLines: [...replacedLogLines(input.sessionId, reason), pinned],
    event: pinnedPayload(snapshot, reason),
    refreshReason: "",
  };
}

/** A pin that replaces a valid snapshot says first why the old one went. */
function replacedLogLines(sessionId: string, reason: PinReason): string[] {
  if (reason === "stale_generation") return [invalidatedLogLine(sessionId, "stale-generation")];
  if (reason === "cold_cache") return [invalidatedLogLine(sessionId, "cold-cache")];
  return [];
}

function emptyPlan(
  action: SnapshotAction,
  logLines: readonly string[],
  event: RulesEventPayload | null,
): ResolutionPlan {
  return {
    decision: "EMPTY_NOT_PINNED",
    sectionText: "",
    rulesHash: "",
    pinnedGeneration: 0,
    action,
    logLines,
    event,
    refreshReason: "",
  };
}

function retainedPlan(
  row: SnapshotRow,
  decision: ResolutionDecision,
  action: SnapshotAction,
  logLines: readonly string[],
  event: RulesEventPayload | null,
): ResolutionPlan {
  return {
    decision,
    sectionText: row.rulesText,
    rulesHash: row.rulesHash,
    pinnedGeneration: row.generation,
    action,
    logLines,
    event,
    refreshReason: "",
  };
}

const NO_ACTION: SnapshotAction = { kind: "none" };

export function decideResolution(input: ResolutionInput): ResolutionPlan {
  // Embedded page agents never inject the section (§4.3 实施补充): no read, no row.
  if (input.embed) {
    return {
      decision: "SKIPPED_EMBED",
      sectionText: "",
      rulesHash: "",
      pinnedGeneration: 0,
      action: NO_ACTION,
      logLines: [],
      event: null,
      refreshReason: "",
    };
  }
  const { existing: row, raw, sessionId } = input;
  const rawEmpty = raw.sectionText.length === 0;

  if (row === null) {
    // §3.4: never pin an empty read, so a session that predates its AGENTS.md still sees it later.
    if (rawEmpty) return emptyPlan(NO_ACTION, [], null);
    // "first" also after an invalidation: the deleted row leaves no trace to tell the two apart, and a
    // guess from the generation would mislabel sessions that simply had no rules before.
    return pinPlan(input, "PINNED", "first", "insert");
  }

  // §4.2 branch 2 / 3': a row for another workspace or with no text must not be injected.
  if (isInvalidRow(row, input.workspace)) {
    const mismatch = row.workspace !== input.workspace;
    if (rawEmpty) {
      const reason = mismatch ? "workspace-mismatch" : "invalid-row";
      return emptyPlan(
        { kind: "delete", belowGeneration: null },
        [invalidatedLogLine(sessionId, reason)],
        invalidatedPayload(reason, input.callerGeneration),
      );
    }
    return mismatch
      ? pinPlan(input, "REPINNED_WORKSPACE_MISMATCH", "workspace_mismatch", "overwrite")
      : pinPlan(input, "PINNED", "invalid_row", "overwrite");
  }

  // Fencing: pinned before a compaction the caller already knows about, whether or not the
  // CompactionCommitted event has reached the consumer yet.
  if (row.generation < input.callerGeneration) {
    if (rawEmpty) {
      return emptyPlan(
        { kind: "delete", belowGeneration: input.callerGeneration },
        [invalidatedLogLine(sessionId, "stale-generation")],
        invalidatedPayload("stale-generation", input.callerGeneration),
      );
    }
    return pinPlan(input, "REPINNED_STALE_GENERATION", "stale_generation", "overwrite");
  }

  // §4.2 branch 1: the snapshot wins over whatever the disk says now, even an empty read (§3.4 评审补充).
  if (raw.rawHash === row.rulesHash) return retainedPlan(row, "RETAINED", NO_ACTION, [], null);
  // The freeze exists to keep the provider's cached prefix; once that is gone (the caller says the
  // cache is cold), holding an edit back only costs stale rules. The row keeps its generation (never
  // below the caller's), so the fencing above still compares against the session's compactions. An
  // empty read is still no reason to drop the section (§3.4 评审补充).
  if (input.cacheCold && !rawEmpty) {
    return pinPlan(input, "REPINNED_COLD_CACHE", "cold_cache", "overwrite", row.generation);
  }
  const decision: ResolutionDecision = rawEmpty ? "RETAINED_DISK_EMPTY" : "RETAINED_DISK_CHANGED";
  // Report once per disk hash per session (the empty read has a hash too, the hash of ''), also across restarts.
  if (row.lastReportedDiskHash === raw.rawHash) return retainedPlan(row, decision, NO_ACTION, [], null);
  const action: SnapshotAction = { kind: "markReported", diskHash: raw.rawHash, pinnedHash: row.rulesHash };
  return rawEmpty
    ? retainedPlan(row, decision, action, [emptyOnDiskLogLine(sessionId)], retainedEmptyPayload(row.rulesHash))
    : retainedPlan(
        row,
        decision,
        action,
        [changedOnDiskLogLine({ sessionId, diskHash: raw.rawHash, pinnedHash: row.rulesHash })],
        retainedChangedPayload(raw.rawHash, row.rulesHash),
      );
}

/**
 * A first pin after an operator's refresh (Invalidate) says so: the next build's prefix change and
 * any cache collapse it causes are then explained by the refresh and its reason, not as a plain new
 * snapshot. Any other plan is unchanged.
 */
export function afterOperatorRefresh(
  plan: ResolutionPlan,
  refresh: { readonly reason: string } | null,
): ResolutionPlan {
  if (refresh === null || plan.decision !== "PINNED") return plan;
  return { ...plan, decision: "REPINNED_OPERATOR_REFRESH", refreshReason: refresh.reason };
}
