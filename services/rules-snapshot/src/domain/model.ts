// Plain data of the rules-snapshot domain. Event payload types come from the contract (type-only
// import: nothing of the generated code runs here).

import type { RulesSnapshotEvent } from "@prefix-guard/proto/events/v1/rules_events";

export type Locale = "zh-CN" | "en";

/** One row of `session_workspace_rules`. */
export interface SnapshotRow {
  readonly sessionId: string;
  readonly workspace: string;
  readonly rulesText: string;
  readonly rulesHash: string;
  readonly sourcePath: string | null;
  readonly sourceMtimeMs: number | null;
  readonly generation: number;
  readonly lastReportedDiskHash: string | null;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
}

/** The columns a pin writes; timestamps are stamped by whoever writes the row. */
export interface PinnedSnapshot {
  readonly sessionId: string;
  readonly workspace: string;
  readonly rulesText: string;
  readonly rulesHash: string;
  readonly sourcePath: string | null;
  readonly sourceMtimeMs: number | null;
  readonly generation: number;
}

/** What was read this round, already rendered into the section it would inject. */
export interface RawRules {
  /** The rendered section (`renderWorkspaceRulesSection`); '' when the source is missing or empty. */
  readonly sectionText: string;
  readonly sourcePath: string | null;
  readonly sourceMtimeMs: number | null;
  /** sha256 of `sectionText` (of '' when empty): the "disk hash" compared with `rules_hash`. */
  readonly rawHash: string;
}

/** Maps 1:1 to the proto `Decision` enum (without the DECISION_ prefix). */
export type ResolutionDecision =
  | "PINNED"
  | "RETAINED"
  | "RETAINED_DISK_CHANGED"
  | "RETAINED_DISK_EMPTY"
  | "REPINNED_WORKSPACE_MISMATCH"
  | "REPINNED_STALE_GENERATION"
  | "EMPTY_NOT_PINNED"
  | "DEGRADED_RAW"
  | "SKIPPED_EMBED"
  | "REPINNED_OPERATOR_REFRESH"
  | "REPINNED_COLD_CACHE";

export type RulesEventPayload = NonNullable<RulesSnapshotEvent["payload"]>;

/** Reasons carried by RulesInvalidated / RulesDeleted and printed in the log lines. */
export type InvalidationReason =
  | "compaction-committed"
  | "stale-generation"
  | "workspace-mismatch"
  | "invalid-row"
  | "operator"
  | (string & {});
export type DeletionReason = "session-deleted" | "side-task-promoted";

/** RulesPinned.reason values. */
export type PinReason =
  | "first"
  | "after_invalidate"
  | "workspace_mismatch"
  | "stale_generation"
  | "invalid_row"
  | "cold_cache";
