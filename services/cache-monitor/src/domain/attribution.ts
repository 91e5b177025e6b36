// Two witnesses of one call: our prefix fingerprints (did the bytes we sent change?) and the provider
// (did its cache miss?). Agreement is the normal case; a disagreement is what an SRE must look at:
// "provider_only" means the cause lies outside us (TTL, routing, a model switch), "ours_only" that we
// changed the prefix and the provider still hit (the change lay past what it caches).

import { cachedShareOf } from "./collapse-detection";
import type { EarlierCall, PrefixJoin, ProviderCacheReport, UsageFacts } from "./model";

export type Attribution = "agree" | "provider_only" | "ours_only" | "unknown";

/**
 * CacheCollapsed.attribution spells agreement "none" (no disagreement to flag); a collapse cannot be
 * "ours_only" because the collapse itself is the provider missing.
 */
export type CollapseAttribution = "none" | "provider_only" | "ours_only" | "unknown";

export type OurVerdict = "changed" | "unchanged" | "first_build" | "unknown";

export interface AttributionThresholds {
  /** Prompt share read from the cache at or below which the provider "read ≈ 0 tokens", i.e. missed. */
  readonly nearZeroReadShare: number;
  /** Below this prompt size providers do not cache at all, so a zero read is no evidence of a miss. */
  readonly minPromptTokens: number;
}

/**
 * 5%: a miss that breaks at the first changed section still reads the bytes before it — 8,576 of
 * 453,569 tokens (1.9%) for seed 001's session 811 — and that is a miss, not a hit.
 */
export const DEFAULT_ATTRIBUTION_THRESHOLDS: AttributionThresholds = { nearZeroReadShare: 0.05, minPromptTokens: 1024 };

/** The opening of every cause for a build prompt-assembly called first while the session has earlier calls. */
export const MONITOR_FORGOT =
  "prompt-assembly called this a first build, but the session has earlier calls: its prefix monitor lost the session's state (a process-local monitor after a restart?)";

/** "; provider says: <reason>" when the provider named a miss reason, else "". */
export function providerSaysOf(usage: UsageFacts): string {
  const reason = usage.providerReport?.cacheMissReason.trim() ?? "";
  return reason !== "" ? `; provider says: ${reason}` : "";
}

/** Whether the build's observation arrived but the PrefixChanged it announced has not. */
export function changeAwaited(prefix: PrefixJoin): boolean {
  return prefix.change === null && prefix.observed?.prefixChanged === true;
}

/**
 * "unknown" until what our fingerprints saw is known: no observation yet, or one that announced a
 * PrefixChanged still on its way (calling that "unchanged" would blame the provider,
 * docs/decisions/awaited-prefix-change.md).
 */
export function ourVerdictOf(prefix: PrefixJoin): OurVerdict {
  if (prefix.change !== null) return "changed";
  if (prefix.observed === null || changeAwaited(prefix)) return "unknown";
  return prefix.observed.firstBuild ? "first_build" : "unchanged";
}

/** A report with no reason, no token count and no diagnostics carries no information. */
function reportHasContent(report: ProviderCacheReport): boolean {
  return (
    report.cacheMissReason.trim() !== "" ||
    report.cacheReadInputTokens > 0 ||
    report.cacheCreationInputTokens > 0 ||
    report.openaiCachedTokens > 0 ||
    report.rawJson.trim() !== ""
  );
}

/**
 * The provider's side: it names a miss reason, its own report says it read ≈ 0 tokens, the billed
 * cached share is ≈ 0, or the share collapsed against the session's norm.
 */
export function providerSawMiss(
  usage: UsageFacts,
  collapsed: boolean,
  thresholds: AttributionThresholds = DEFAULT_ATTRIBUTION_THRESHOLDS,
): boolean {
  if (collapsed) return true;
  const report = usage.providerReport;
  if (report !== null && report.cacheMissReason.trim() !== "") return true;
  if (usage.promptTokens < thresholds.minPromptTokens) return false;
  const nearZero = thresholds.nearZeroReadShare * usage.promptTokens;
  if (report !== null && reportHasContent(report)) {
    const reportedRead = Math.max(report.cacheReadInputTokens, report.openaiCachedTokens);
    if (reportedRead <= nearZero) return true;
  }
  return cachedShareOf(usage) <= thresholds.nearZeroReadShare;
}

/**
 * Build-level attribution. No usage or no fingerprint for the request → "unknown" (the other topic
 * may still deliver it). A first build expects a cold cache, so any outcome agrees with it.
 */
export function attributeBuild(
  ours: OurVerdict,
  usage: UsageFacts | null,
  collapsed: boolean,
  thresholds: AttributionThresholds = DEFAULT_ATTRIBUTION_THRESHOLDS,
): Attribution {
  if (usage === null || ours === "unknown") return "unknown";
  if (ours === "first_build") return "agree";
  const providerMissed = providerSawMiss(usage, collapsed, thresholds);
  if (ours === "changed") return providerMissed ? "agree" : "ours_only";
  return providerMissed ? "provider_only" : "agree";
}

export function collapseAttributionOf(attribution: Attribution): CollapseAttribution {
  return attribution === "agree" ? "none" : attribution;
}

/** Compact idle time for a cause sentence: 40s, 12m, 18.5h, 3.2d. */
export function formatIdle(ms: number): string {
  const seconds = ms / 1000;
  if (seconds < 90) return `${Math.round(seconds)}s`;
  const minutes = seconds / 60;
  if (minutes < 90) return `${Math.round(minutes)}m`;
  const hours = minutes / 60;
  if (hours < 48) return `${Number(hours.toFixed(1))}h`;
  return `${Number((hours / 24).toFixed(1))}d`;
}

/**
 * One sentence an SRE can act on. Our PrefixChanged's cause when we changed the prefix; otherwise
 * what is known about the provider side: its stated reason, a model switch (caches are per model),
 * or the idle time since the previous call (TTL expiry) — routing cannot be seen from here, so it is named as the remaining suspect.
 */
export function collapseCause(usage: UsageFacts, prefix: PrefixJoin, previous: EarlierCall | null): string {
  const reason = usage.providerReport?.cacheMissReason.trim() ?? "";
  const providerSays = providerSaysOf(usage);
  const ours = ourVerdictOf(prefix);
  if (ours === "changed" && prefix.change !== null) {
    const cause =
      prefix.change.cause.trim() !== ""
        ? prefix.change.cause
        : `prefix changed: [${prefix.change.changedSections.join(",")}]`;
    return cause + providerSays;
  }
  if (ours === "unknown") {
    return changeAwaited(prefix)
      ? `the PrefixChanged of request ${usage.requestId} has not arrived yet: cause not known until it does${providerSays}`
      : `no prompt.prefix.v1 fingerprint for request ${usage.requestId} yet: cause not known${providerSays}`;
  }
  if (ours === "first_build") {
    return previous === null
      ? `first build of the session${providerSays}`
      : `${MONITOR_FORGOT}, so what changed is unknown${providerSays}`;
  }
  if (reason !== "") return `provider-side cache miss with our prefix unchanged: ${reason}`;
  if (previous !== null && previous.model !== "" && previous.model !== usage.model) {
    return `provider-side cache miss with our prefix unchanged: model switched ${previous.model}→${usage.model} (provider caches are per model)`;
  }
  if (previous !== null) {
    const idle = formatIdle(Math.max(0, usage.calledAtMs - previous.calledAtMs));
    return `provider-side cache miss with our prefix unchanged after ${idle} idle: cache TTL expiry or routing to another cache`;
  }
  return "provider-side cache miss with our prefix unchanged: cache TTL expiry or routing to another cache";
}

/**
 * Sections a collapse is counted under in the totals: "(none)" when our fingerprints saw no change
 * (the cause is outside us), "(unknown)" while what they saw has not arrived.
 */
export const NO_SECTION = "(none)";
export const UNKNOWN_SECTION = "(unknown)";
const TOOLS_SECTION = "(tools)";
const HISTORY_SECTION = "(history)";

export function sectionsOfCollapse(prefix: PrefixJoin): string[] {
  const change = prefix.change;
  if (change === null) return [ourVerdictOf(prefix) === "unknown" ? UNKNOWN_SECTION : NO_SECTION];
  if (change.changedSections.length > 0) return [...new Set(change.changedSections)];
  const sections: string[] = [];
  if (change.toolsChanged) sections.push(TOOLS_SECTION);
  if (change.historyRewritten) sections.push(HISTORY_SECTION);
  return sections.length > 0 ? sections : [NO_SECTION];
}
