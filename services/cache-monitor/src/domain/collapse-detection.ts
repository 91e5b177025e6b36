// A collapse is a call whose provider cache served far less of what the session had already sent
// than it normally does. The measure is *reuse*: cached tokens of this call over the prompt tokens
// of the session's previous call, i.e. the share of the warm prefix the provider still had. Not the
// cached share of this call's own prompt: an agent that appends a 20k-token tool result to a 10k
// prompt drops to ~33% cached with nothing lost, and a share rule calls that a collapse (and blames
// the provider). "Normal" is learned from the session itself (the median reuse of its recent
// calls): a provider caching only at breakpoints reuses less every call, and that is its norm.

import type { EarlierCall, TokenUsage } from "./model";

export interface CollapseThresholds {
  /**
   * Calls with a smaller prompt neither count towards the norm nor get flagged: providers do not
   * cache prompts under ~1024 tokens (Anthropic's and OpenAI's minimum), so their share says nothing.
   */
  readonly minPromptTokens: number;
  /** How many of the session's most recent eligible calls make its norm (median of their reuse). */
  readonly baselineCalls: number;
  /** Fewer eligible earlier calls than this: no norm yet, so never a collapse. */
  readonly minHistoryCalls: number;
  /** A call collapses when its reuse is below this fraction of the session's normal reuse. */
  readonly collapseFraction: number;
  /** A normal reuse below this means the session does not really cache: there is nothing to collapse from. */
  readonly minBaselineShare: number;
}

/**
 * Defaults: a norm from the last 20 calls once 3 exist; a collapse when a quarter or more of the
 * warm prefix the session normally reuses is gone. A cached token costs 1/50 of an uncached one at
 * seed 001's prices, so losing a quarter of a warm 12k-token prefix already makes the call's input
 * about 4.6 times its normal price; seed 001's collapses (8,576 of ~450k reused, 2%) are far past
 * the line. Ordinary reuse sits at 97-100% (providers cache in blocks of 128 tokens or at
 * breakpoints), so the line is far from the wobble.
 */
export const DEFAULT_COLLAPSE_THRESHOLDS: CollapseThresholds = {
  minPromptTokens: 1024,
  baselineCalls: 20,
  minHistoryCalls: 3,
  collapseFraction: 0.75,
  minBaselineShare: 0.5,
};

export type NotCollapsedReason =
  | "first_call"
  | "small_prompt"
  | "too_little_history"
  | "session_does_not_cache"
  | "within_norm";

export interface CollapseDetection {
  readonly collapsed: boolean;
  /** Cached share of this call's own prompt (what dashboards show). */
  readonly cachedShare: number;
  /** Cached tokens over the previous call's prompt tokens, capped at 1; null for a first call. */
  readonly reuse: number | null;
  /** The session's normal reuse (median), when there was one to compare with. */
  readonly baselineReuse: number | null;
  /**
   * The session's normal cached share of the prompt (median over the same calls): the expectation a
   * collapse is priced at, seed 001's "hit state" when the session cached everything.
   */
  readonly baselineShare: number | null;
  /** Why the call is not a collapse; null when it is one. */
  readonly reason: NotCollapsedReason | null;
}

export function cachedShareOf(usage: Pick<TokenUsage, "promptTokens" | "cachedTokens">): number {
  return usage.promptTokens > 0 ? Math.min(usage.cachedTokens / usage.promptTokens, 1) : 0;
}

/** Share of `previousPromptTokens` the provider served again; 0 when nothing was sent before. */
export function reuseOf(cachedTokens: number, previousPromptTokens: number): number {
  return previousPromptTokens > 0 ? Math.min(cachedTokens / previousPromptTokens, 1) : 0;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  if (sorted.length % 2 === 1) return sorted[middle] ?? 0;
  return ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

export interface SessionNorm {
  /** Median reuse of the eligible calls. */
  readonly reuse: number;
  /** Median cached share of the same calls. */
  readonly share: number;
}

/**
 * The session's norm over its last `baselineCalls` eligible calls: not its first call (cold by
 * construction), cacheable, with a predecessor whose prompt was cacheable too. Null with too little history.
 * Medians rather than means, so one earlier collapse does not lower the bar for the next.
 */
export function sessionNorm(
  earlier: readonly EarlierCall[],
  thresholds: CollapseThresholds = DEFAULT_COLLAPSE_THRESHOLDS,
): SessionNorm | null {
  const samples: { reuse: number; share: number }[] = [];
  for (let index = 1; index < earlier.length; index += 1) {
    const call = earlier[index];
    const previous = earlier[index - 1];
    if (call === undefined || previous === undefined) continue;
    if (call.firstOfSession || Math.min(call.promptTokens, previous.promptTokens) < thresholds.minPromptTokens)
      continue;
    samples.push({ reuse: reuseOf(call.cachedTokens, previous.promptTokens), share: cachedShareOf(call) });
  }
  const recent = samples.slice(-thresholds.baselineCalls);
  if (recent.length < Math.max(1, thresholds.minHistoryCalls)) return null;
  return { reuse: median(recent.map((s) => s.reuse)), share: median(recent.map((s) => s.share)) };
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
  const previous = earlier.at(-1);
  const verdict = (reason: NotCollapsedReason | null, reuse: number | null, norm: SessionNorm | null) => ({
    collapsed: reason === null,
    cachedShare,
    reuse,
    baselineReuse: norm?.reuse ?? null,
    baselineShare: norm?.share ?? null,
    reason,
  });
  if (firstCall || previous === undefined) return verdict("first_call", null, null);
  const reuse = reuseOf(call.cachedTokens, previous.promptTokens);
  // Nothing cacheable was sent before (or is sent now): a low read says nothing about the cache.
  if (call.promptTokens < thresholds.minPromptTokens || previous.promptTokens < thresholds.minPromptTokens)
    return verdict("small_prompt", reuse, null);
  const norm = sessionNorm(earlier, thresholds);
  if (norm === null) return verdict("too_little_history", reuse, null);
  if (norm.reuse < thresholds.minBaselineShare) return verdict("session_does_not_cache", reuse, norm);
  if (reuse < thresholds.collapseFraction * norm.reuse) return verdict(null, reuse, norm);
  return verdict("within_norm", reuse, norm);
}
