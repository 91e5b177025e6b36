// When prompt-assembly calls a build "first" although cache-monitor holds an earlier build of the
// same session, the builder lost its state and its PrefixChanged never came. cache-monitor keeps
// every FingerprintObserved durably, so it can still say which sections moved, by comparing the
// two builds' section hashes. History is not comparable this way (only its hash is published), so
// a recovered change names sections, tools, model and a compaction, never a history rewrite.

import { MONITOR_FORGOT } from "./attribution";
import type { ObservedFingerprint, PrefixChange } from "./model";

export function recoverPrefixChange(previous: ObservedFingerprint, current: ObservedFingerprint): PrefixChange {
  const before = new Map(previous.sections.map((section) => [section.key, section.sha256]));
  const now = new Set(current.sections.map((section) => section.key));
  const clauses: string[] = [];
  const changedSections: string[] = [];
  for (const section of current.sections) {
    const hash = before.get(section.key);
    if (hash === section.sha256) continue;
    changedSections.push(section.key);
    clauses.push(explainSection(section.key, hash === undefined ? "added" : "changed", previous, current));
  }
  for (const section of previous.sections) {
    if (now.has(section.key)) continue;
    changedSections.push(section.key);
    clauses.push(explainSection(section.key, "removed", previous, current));
  }
  const toolsChanged = previous.toolsHash !== current.toolsHash;
  if (toolsChanged) clauses.push("tool definitions or order changed");
  if (previous.model !== current.model) clauses.push(`model changed ${previous.model}→${current.model}`);
  if (previous.compactionGeneration !== current.compactionGeneration) {
    clauses.push(`compaction generation ${previous.compactionGeneration}→${current.compactionGeneration}`);
  }
  const found =
    clauses.length > 0
      ? `cache-monitor's comparison with the session's previous build: ${clauses.join("; ")}`
      : "cache-monitor's comparison with the session's previous build finds the system sections and tools unchanged (history cannot be compared)";
  return {
    changedSections,
    toolsChanged,
    toolsChangeKind: toolsChanged ? "unknown" : "none",
    historyRewritten: false,
    cause: `${MONITOR_FORGOT}; ${found}`,
  };
}

function explainSection(
  key: string,
  kind: "added" | "changed" | "removed",
  previous: ObservedFingerprint,
  current: ObservedFingerprint,
): string {
  if (key === "workspace-rules") return `workspace-rules ${kind} (rulesDecision=${current.rulesDecision})`;
  if (key === "current-date" && previous.anchorDate !== current.anchorDate) {
    return `current-date ${kind}: date ${previous.anchorDate}→${current.anchorDate}`;
  }
  return `section \`${key}\` ${kind}`;
}
