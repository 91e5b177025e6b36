// Compares this request's prefix fingerprint with the previous one of the same session and says,
// in one deterministic sentence, why the prefix changed. The hints carry what the builder knew
// when it built each request (compaction generation, rules snapshot decision, dropped turns,
// date anchor), so the explanation names the event behind a change, not just the section.

import { type ColdCache, formatIdleGap } from "./cold-cache";
import { type PrefixFingerprint, sameMessageHash } from "./fingerprint";

export const WORKSPACE_RULES_SECTION_KEY = "workspace-rules";
// Same key as date-anchor.ts exports; kept local so the two modules stay independent.
const CURRENT_DATE_SECTION_KEY = "current-date";

export interface CauseHints {
  readonly compactionGenerationBefore: number | null;
  readonly compactionGenerationNow: number;
  /**
   * The decision behind this build's rules section, by name: one of rules-snapshot's Resolve
   * decisions (RulesDecisionName, explained here), or one a rules source made itself, which then
   * explains itself in `rulesChange`.
   */
  readonly rulesDecision: string;
  /** A rules source's own sentences for a decision rules-snapshot does not make. */
  readonly rulesChange?: RulesChangeSentences;
  /** The operator's reason on REPINNED_OPERATOR_REFRESH. */
  readonly rulesRefreshReason?: string;
  /** Why the cache was cold on REPINNED_COLD_CACHE: the idle gap and the retention it outlived. */
  readonly coldCache?: ColdCache;
  readonly droppedTurnsBefore: number | null;
  readonly droppedTurnsNow: number;
  readonly anchorDateBefore: string | null;
  readonly anchorDateNow: string;
  /**
   * How a date anchoring that does not follow the first user message explains a changed
   * current-date section; absent, a moved anchor means the first user message was deleted.
   */
  readonly explainDateChange?: DateChangeExplanation;
}

/** How a rules source explains its section first appearing, or changing, between two builds. */
export interface RulesChangeSentences {
  readonly added: string;
  readonly changed: string;
}

/** Why the current-date section changed, given the previous build's anchor date (null: none known) and this one's. */
export type DateChangeExplanation = (anchorDateBefore: string | null, anchorDateNow: string) => string;

export type ToolsChangeKind = "none" | "order_only" | "definitions";

export interface PrefixComparison {
  /** No previous fingerprint: nothing to compare, nothing reported as changed. */
  readonly firstBuild: boolean;
  readonly changed: boolean;
  readonly modelChanged: boolean;
  /** Sections whose text changed or that were added, in current order, then removed ones in previous order. */
  readonly changedSections: readonly string[];
  readonly toolsChanged: boolean;
  readonly toolsChangeKind: ToolsChangeKind;
  /** The previous messages are not a prefix of the current ones (edit, delete, compaction, window move). */
  readonly historyRewritten: boolean;
  /** First message index that differs from the previous request; null when history only grew. */
  readonly firstChangedMessageIndex: number | null;
  readonly cause: string;
  /**
   * The change is the design at work, not a cache breaker: a committed compaction rewrote the
   * history and (on its re-pin) the workspace rules, and nothing else moved.
   */
  readonly expected: boolean;
}

/** rules-snapshot's Resolve decisions by name (the proto enum without its DECISION_ prefix, as the events carry them). */
export type RulesDecisionName =
  | "UNSPECIFIED"
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

/** A build compared with nothing: the session's first, or one that is never a turn's prefix. */
export function uncomparedPrefix(cause: string, firstBuild: boolean): PrefixComparison {
  return {
    firstBuild,
    changed: false,
    modelChanged: false,
    changedSections: [],
    toolsChanged: false,
    toolsChangeKind: "none",
    historyRewritten: false,
    firstChangedMessageIndex: null,
    cause,
    expected: true,
  };
}

/** How a cause names "no retention asked for": the provider's own default. */
const DEFAULT_RETENTION = "default";

export function comparePrefix(
  previous: PrefixFingerprint | null,
  current: PrefixFingerprint,
  hints: CauseHints,
): PrefixComparison {
  if (previous === null) return uncomparedPrefix("first build", true);
  const modelChanged = previous.model !== current.model;
  const sections = compareSections(previous, current);
  const toolsChangeKind = compareTools(previous, current);
  const firstChangedMessageIndex = firstDivergence(previous.messageHashes, current.messageHashes);
  const historyRewritten = firstChangedMessageIndex !== null;
  const previousRetention = previous.cacheRetention ?? DEFAULT_RETENTION;
  const currentRetention = current.cacheRetention ?? DEFAULT_RETENTION;
  const retentionChanged = previousRetention !== currentRetention;
  const changed =
    modelChanged || sections.changed.length > 0 || toolsChangeKind !== "none" || historyRewritten || retentionChanged;
  const clauses: string[] = [];
  if (modelChanged) clauses.push(`model changed ${previous.model}→${current.model}`);
  // Named, not blamed: the harness chose it, and the provider writes the prefix anew under the new TTL.
  if (retentionChanged) clauses.push(`cache retention changed ${previousRetention}→${currentRetention}`);
  for (const key of sections.changed) clauses.push(explainSection(key, sections.kindOf(key), hints));
  if (toolsChangeKind === "definitions") clauses.push("tool definitions changed");
  if (toolsChangeKind === "order_only") clauses.push("tool order changed (order_only)");
  if (firstChangedMessageIndex !== null) clauses.push(explainHistory(firstChangedMessageIndex, hints));
  return {
    firstBuild: false,
    changed,
    modelChanged,
    changedSections: sections.changed,
    toolsChanged: toolsChangeKind !== "none",
    toolsChangeKind,
    historyRewritten,
    firstChangedMessageIndex,
    cause: changed ? clauses.join("; ") : "no change",
    expected:
      !changed ||
      // A retention change alone is the harness's setting, not a cache breaker.
      (retentionChanged &&
        !modelChanged &&
        sections.changed.length === 0 &&
        toolsChangeKind === "none" &&
        !historyRewritten) ||
      // A compaction's rewrite and re-pin, or the rules re-pinned on purpose (an operator's refresh,
      // or a held-back edit landing on a cache that had expired anyway): named, but not avoidable breaks.
      ((compactionMoved(hints) || rulesRepinnedOnPurpose(hints)) &&
        !modelChanged &&
        toolsChangeKind === "none" &&
        (compactionMoved(hints) || firstChangedMessageIndex === null) &&
        sections.changed.every((key) => key === WORKSPACE_RULES_SECTION_KEY)),
  };
}

/** A closed code for why a prefix broke: one per kind of thing that moved (a metric label). */
export type PrefixBreakCause = "section_changed" | "tools_changed" | "history_rewritten" | "model_changed";

/**
 * One thing that broke the cacheable prefix. `section` is a section key, or "tools", "history",
 * "model" for the parts that are not sections; `expected` is the comparison's verdict (a committed
 * compaction's rewrite and re-pin), so a re-pin outside compaction is told apart from the design at work.
 */
export interface PrefixBreak {
  readonly section: string;
  readonly cause: PrefixBreakCause;
  readonly expected: boolean;
}

/** What a changed prefix counts under in metrics: bounded labels only (section keys and closed codes). */
export function prefixBreaksOf(comparison: PrefixComparison): PrefixBreak[] {
  if (!comparison.changed) return [];
  const { expected } = comparison;
  const breaks: PrefixBreak[] = comparison.changedSections.map((section) => ({
    section,
    cause: "section_changed",
    expected,
  }));
  if (comparison.toolsChanged) breaks.push({ section: "tools", cause: "tools_changed", expected });
  if (comparison.historyRewritten) breaks.push({ section: "history", cause: "history_rewritten", expected });
  if (comparison.modelChanged) breaks.push({ section: "model", cause: "model_changed", expected });
  return breaks;
}

/**
 * The seed's log line, e.g.
 * `prefix changed session=811 changedSections=[workspace-rules] toolsChanged=false messages=478 cause="..."`.
 * The cause is JSON-quoted so quotes or newlines inside it cannot break log parsing.
 */
export function formatPrefixChangedLog(sessionId: string, comparison: PrefixComparison, messageCount: number): string {
  return (
    `prefix changed session=${sessionId} changedSections=[${comparison.changedSections.join(",")}]` +
    ` toolsChanged=${String(comparison.toolsChanged)} messages=${messageCount} cause=${JSON.stringify(comparison.cause)}`
  );
}

type SectionChangeKind = "changed" | "added" | "removed";

function compareSections(
  previous: PrefixFingerprint,
  current: PrefixFingerprint,
): { changed: string[]; kindOf: (key: string) => SectionChangeKind } {
  const previousHashes = new Map(previous.sections.map((section) => [section.key, section.sha256]));
  const currentKeys = new Set(current.sections.map((section) => section.key));
  const kinds = new Map<string, SectionChangeKind>();
  for (const section of current.sections) {
    const before = previousHashes.get(section.key);
    if (before === undefined) kinds.set(section.key, "added");
    else if (before !== section.sha256) kinds.set(section.key, "changed");
  }
  for (const section of previous.sections) {
    if (!currentKeys.has(section.key)) kinds.set(section.key, "removed");
  }
  return { changed: [...kinds.keys()], kindOf: (key) => kinds.get(key) ?? "changed" };
}

function compareTools(previous: PrefixFingerprint, current: PrefixFingerprint): ToolsChangeKind {
  if (previous.toolsHash === current.toolsHash) return "none";
  return previous.toolsSetHash === current.toolsSetHash ? "order_only" : "definitions";
}

/**
 * Index of the first previous message that is not reproduced at the same place now, or null. The
 * previous hashes may be cut (read back from storage): see sameMessageHash.
 */
function firstDivergence(previous: readonly string[], current: readonly string[]): number | null {
  for (let index = 0; index < previous.length; index += 1) {
    const now = current[index];
    if (now === undefined || !sameMessageHash(previous[index] as string, now)) return index;
  }
  return null;
}

function explainSection(key: string, kind: SectionChangeKind, hints: CauseHints): string {
  if (key === WORKSPACE_RULES_SECTION_KEY) return explainWorkspaceRules(kind, hints);
  if (key === CURRENT_DATE_SECTION_KEY && kind === "changed" && hints.explainDateChange !== undefined) {
    return hints.explainDateChange(hints.anchorDateBefore, hints.anchorDateNow);
  }
  if (key === CURRENT_DATE_SECTION_KEY && kind === "changed" && anchorMoved(hints)) {
    return `current-date anchor moved ${hints.anchorDateBefore ?? ""}→${hints.anchorDateNow} (first user message deleted)`;
  }
  return `harness section \`${key}\` ${kind}`;
}

type RulesChangeExplanation = (kind: "added" | "changed", hints: CauseHints) => string;

// A snapshot kept by rules-snapshot should give identical bytes; naming the decision points at it.
const unexpectedChange: RulesChangeExplanation = (kind, hints) =>
  `workspace-rules ${kind} (rulesDecision=${hints.rulesDecision})`;
const afterCompaction: RulesChangeExplanation = (_kind, hints) =>
  `new workspace-rules snapshot after compaction generation ${hints.compactionGenerationNow}`;

/** Every decision is explained: a new one does not compile until it has its sentence here. */
const WORKSPACE_RULES_CHANGE: Record<RulesDecisionName, RulesChangeExplanation> = {
  PINNED: (kind, hints) => {
    if (compactionMoved(hints)) return afterCompaction(kind, hints);
    return kind === "added"
      ? "new workspace-rules snapshot pinned (rules first appeared)"
      : "new workspace-rules snapshot pinned";
  },
  REPINNED_STALE_GENERATION: afterCompaction,
  REPINNED_OPERATOR_REFRESH: (_kind, hints) =>
    `new workspace-rules snapshot pinned after an operator refresh (reason: ${hints.rulesRefreshReason || "none given"})`,
  REPINNED_COLD_CACHE: (_kind, hints) => {
    const gap = hints.coldCache;
    const why =
      gap === undefined
        ? "the cache had expired"
        : `idle ${formatIdleGap(gap.idleMs)} outlived the ${gap.retention} cache retention`;
    return `workspace-rules re-pinned on a cold cache (${why}): the AGENTS.md edit held back since the last pin takes effect`;
  },
  REPINNED_WORKSPACE_MISMATCH: () =>
    "new workspace-rules snapshot pinned for another workspace (the snapshot held was of a different workspace)",
  DEGRADED_RAW: () => "workspace-rules degraded to raw text (snapshot store unavailable)",
  RETAINED: unexpectedChange,
  RETAINED_DISK_CHANGED: unexpectedChange,
  RETAINED_DISK_EMPTY: unexpectedChange,
  EMPTY_NOT_PINNED: unexpectedChange,
  SKIPPED_EMBED: unexpectedChange,
  UNSPECIFIED: unexpectedChange,
};

function explainWorkspaceRules(kind: SectionChangeKind, hints: CauseHints): string {
  if (kind === "removed") return `workspace-rules section removed (rulesDecision=${hints.rulesDecision})`;
  if (hints.rulesChange !== undefined) return hints.rulesChange[kind];
  const explain = isResolveDecision(hints.rulesDecision)
    ? WORKSPACE_RULES_CHANGE[hints.rulesDecision]
    : unexpectedChange;
  return explain(kind, hints);
}

function isResolveDecision(name: string): name is RulesDecisionName {
  return Object.hasOwn(WORKSPACE_RULES_CHANGE, name);
}

function explainHistory(index: number, hints: CauseHints): string {
  const generationBefore = hints.compactionGenerationBefore;
  if (generationBefore !== null && generationBefore !== hints.compactionGenerationNow) {
    return `history rewritten: compaction generation ${generationBefore}→${hints.compactionGenerationNow}`;
  }
  const droppedBefore = hints.droppedTurnsBefore;
  if (droppedBefore !== null && hints.droppedTurnsNow > droppedBefore) {
    return "history rewritten: oldest turns dropped (budget)";
  }
  if (droppedBefore !== null && hints.droppedTurnsNow < droppedBefore) {
    return `history rewritten: dropped turns ${droppedBefore}→${hints.droppedTurnsNow}`;
  }
  return `history rewritten at message ${index} (message edited or deleted)`;
}

function rulesRepinnedOnPurpose(hints: CauseHints): boolean {
  return hints.rulesDecision === "REPINNED_OPERATOR_REFRESH" || hints.rulesDecision === "REPINNED_COLD_CACHE";
}

function compactionMoved(hints: CauseHints): boolean {
  return (
    hints.compactionGenerationBefore !== null && hints.compactionGenerationBefore !== hints.compactionGenerationNow
  );
}

function anchorMoved(hints: CauseHints): boolean {
  return hints.anchorDateBefore !== null && hints.anchorDateBefore !== hints.anchorDateNow;
}
