// A collapse is a call whose cached share fell far below what is normal for its session. "Normal"
// is learned from the session itself: long agent sessions sit at 99%+ (seed 001 §1.1: 756 hit
// 99.8% the turn before), so a fixed global threshold would miss a drop to 60% in one session and
// flag every call of a session that never caches.

import type { EarlierCall, TokenUsage } from "./model";

export interface CollapseThresholds {
  /**
   * Calls with a smaller prompt neither count towards the norm nor get flagged: providers do not
   * cache prompts under ~1024 tokens (Anthropic's and OpenAI's minimum), so their share says nothing.
   */
  readonly minPromptTokens: number;
  /** How many of the session's most recent eligible calls make its norm (median of their shares). */
  readonly baselineCalls: number;
  /** Fewer eligible earlier calls than this: no norm yet, so never a collapse. */
  readonly minHistoryCalls: number;
  /** A call collapses when its cached share is below this fraction of the session's norm. */
  readonly collapseFraction: number;
  /** A norm below this share means the session does not really cache: there is nothing to collapse from. */
  readonly minBaselineShare: number;
}

/**
 * Defaults: a norm from the last 20 calls once 3 exist; a collapse below half the norm. Seed 001's
 * collapses (1.9% and 2.1% against ~99.8%) are far past that line, while the ordinary wobble of a
 * growing history (a few % uncached tail) stays well above it.
 */
export const DEFAULT_COLLAPSE_THRESHOLDS: CollapseThresholds = {
  minPromptTokens: 1024,
  baselineCalls: 20,
  minHistoryCalls: 3,
  collapseFraction: 0.5,
  minBaselineShare: 0.5,
};

export type NotCollapsedReason =
  | "first_call"
  | "small_prompt"
  | "too_little_history"
  | "session_does_not_cache"
  | "within_norm";

export type CollapseDetection =
  | { readonly collapsed: true; readonly cachedShare: number; readonly baselineShare: number }
  | {
      readonly collapsed: false;
      readonly cachedShare: number;
      /** The norm, when there was one to compare with. */
      readonly baselineShare: number | null;
      readonly reason: NotCollapsedReason;
    };

export function cachedShareOf(usage: Pick<TokenUsage, "promptTokens" | "cachedTokens">): number {
  return usage.promptTokens > 0 ? Math.min(usage.cachedTokens / usage.promptTokens, 1) : 0;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  if (sorted.length % 2 === 1) return sorted[middle] ?? 0;
  return ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

/**
 * The session's normal cached share: median over its last `baselineCalls` calls that are not its
 * first call (cold by construction) and have a cacheable prompt. Null with too little history.
 * A median rather than a mean, so one earlier collapse does not lower the bar for the next.
 */
export function baselineCachedShare(
  earlier: readonly EarlierCall[],
  thresholds: CollapseThresholds = DEFAULT_COLLAPSE_THRESHOLDS,
): number | null {
  const eligible = earlier.filter((call) => !call.firstOfSession && call.promptTokens >= thresholds.minPromptTokens);
  const recent = eligible.slice(-thresholds.baselineCalls);
  if (recent.length < Math.max(1, thresholds.minHistoryCalls)) return null;
  return median(recent.map(cachedShareOf));
}

/**
 * @param earlier the session's calls before this one, oldest first.
 * @param firstCall true when this call is the session's first (no earlier call, or the build said first_build).
 */
export function detectCollapse(
  call: TokenUsage,
  earlier: readonly EarlierCall[],
  firstCall: boolean,
  thresholds: CollapseThresholds = DEFAULT_COLLAPSE_THRESHOLDS,
): CollapseDetection {
  const cachedShare = cachedShareOf(call);
  if (firstCall || earlier.length === 0)
    return { collapsed: false, cachedShare, baselineShare: null, reason: "first_call" };
  if (call.promptTokens < thresholds.minPromptTokens)
    return { collapsed: false, cachedShare, baselineShare: null, reason: "small_prompt" };
  const baselineShare = baselineCachedShare(earlier, thresholds);
  if (baselineShare === null)
    return { collapsed: false, cachedShare, baselineShare: null, reason: "too_little_history" };
  if (baselineShare < thresholds.minBaselineShare)
    return { collapsed: false, cachedShare, baselineShare, reason: "session_does_not_cache" };
  if (cachedShare < thresholds.collapseFraction * baselineShare) return { collapsed: true, cachedShare, baselineShare };
  return { collapsed: false, cachedShare, baselineShare, reason: "within_norm" };
}
