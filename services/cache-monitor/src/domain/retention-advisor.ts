// `prefixctl advise`: the calls a session actually made, priced again as if its cache had been kept
// 5 minutes, 1 hour or 24 hours. Gaps decide hits, write prices decide the bill:
// - a call that hit keeps its observed cached tokens under every retention that outlives its gap,
//   and misses under one that does not;
// - a call that missed after a gap longer than the retention it ran under (an expiry) would have
//   hit under a retention outliving the gap, reading the warm prefix (the previous prompt, at the
//   session's median observed reuse), but no further than the prefix break when our builder saw the
//   prefix change during the gap: the longer retention would have kept the old prefix, and the
//   call's new one matches it only up to the first changed byte;
// - any other miss (a prefix change, a model switch, the first call) misses under every retention:
//   retention cannot fix it.
// Every prompt token not read from the cache is written at the retention's write price, as a harness
// that puts its breakpoint at the end of the prompt does.

import { cachedShareOf, reuseOf } from "./collapse-detection";
import type { PriceTable } from "./price-table";
import { RETENTION_TTL_MS, RETENTIONS, type Retention, retentionInForce } from "./retention";

export interface AdvisedCall {
  /** Calls of several sessions may be priced together; a call's predecessor is the previous call of its own session. */
  readonly sessionId?: string;
  readonly model: string;
  readonly calledAtMs: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  readonly cacheCreationTokens: number;
  readonly cacheCreation1hTokens: number;
  /** The retention its build asked for ("" or absent: the provider's default). */
  readonly cacheRetention?: string;
  /** Its model's default retention (the provider catalogue's), when the build asked for none. Absent = 5m. */
  readonly defaultRetention?: Retention;
  /**
   * When our builder saw this call's prefix differ from its session's previous build: the tokens from
   * the first changed byte to the end (prompt.prefix.v1 PrefixChanged.tokens_after_break). Absent: no
   * change seen, or not known.
   */
  readonly tokensAfterBreak?: number;
  /** What was recorded for it (billed or priced at the time). */
  readonly cost: number;
}

export interface RetentionCost {
  readonly retention: Retention;
  readonly cost: number;
  readonly hits: number;
  readonly misses: number;
  /** False when the model's provider does not sell this retention (its price table says which it does). */
  readonly offered: boolean;
}

export interface RetentionAdvice {
  readonly calls: number;
  /** What the calls cost as recorded. */
  readonly recordedCost: number;
  /** The classic three (5m, 1h, 24h) and any other the calls' providers sell, in RETENTIONS order. */
  readonly retentions: readonly RetentionCost[];
  /** What the calls' provider keeps their cache for when a build opts into nothing (gpt-5.6: 30m). */
  readonly defaultRetention: Retention;
  /** The cheapest offered retention; null without calls. */
  readonly cheapest: Retention | null;
  /** How much the cheapest saves against the default retention (0 when that is the cheapest). */
  readonly savingVsDefault: number;
  /** How much the cheapest saves against the next cheapest offered retention. */
  readonly savingVsNext: number;
}

/** A hit "read ≈ 0 tokens" below this share of its prompt, as attribution judges it. */
const HIT_SHARE = 0.05;
const PER_MILLION = 1_000_000;

/** Priced and shown for every model, whatever its provider sells: the retentions an advice always compares. */
const CLASSIC_RETENTIONS: readonly Retention[] = ["5m", "1h", "24h"];

/**
 * The write price of a retention: the table's own price for it (the catalogue's write multiplier),
 * else the next shorter retention's, ending at the 5-minute write price, then the input price.
 */
export function writePriceFor(prices: PriceTable, retention: Retention): number {
  const own = prices.writePerMillion?.[retention];
  if (own !== undefined) return own;
  const fiveMinutes = prices.cacheWritePerMillion ?? prices.inputPerMillion;
  const oneHour = prices.cacheWrite1hPerMillion ?? fiveMinutes;
  switch (retention) {
    case "5m":
    case "30m":
      return fiveMinutes;
    case "1h":
    case "12h":
      return oneHour;
    case "24h":
      return prices.cacheWrite24hPerMillion ?? oneHour;
  }
}

/** Retentions the price table declares; a table that declares none is assumed to offer the classic three. */
export function offeredRetentions(prices: PriceTable): readonly Retention[] {
  return prices.retentions ?? CLASSIC_RETENTIONS;
}

function median(values: readonly number[]): number {
  if (values.length === 0) return 1;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 1) : ((sorted[middle - 1] ?? 1) + (sorted[middle] ?? 1)) / 2;
}

/** Each call's predecessor in its own session (calls are given session by session, each in call order). */
function predecessors(calls: readonly AdvisedCall[]): (AdvisedCall | undefined)[] {
  return calls.map((call, index) => {
    const previous = calls[index - 1];
    return previous !== undefined && previous.sessionId === call.sessionId ? previous : undefined;
  });
}

/** What each call could read under a retention outliving its gap; null = a miss under every retention. */
function warmReads(calls: readonly AdvisedCall[], before: readonly (AdvisedCall | undefined)[]): (number | null)[] {
  const observedReuse: number[] = [];
  calls.forEach((call, index) => {
    const previous = before[index];
    if (previous !== undefined && cachedShareOf(call) > HIT_SHARE)
      observedReuse.push(reuseOf(call.cachedTokens, previous.promptTokens));
  });
  const normalReuse = median(observedReuse);
  return calls.map((call, index) => {
    const previous = before[index];
    if (previous === undefined || previous.model !== call.model) return null;
    if (cachedShareOf(call) > HIT_SHARE) return call.cachedTokens;
    const gap = call.calledAtMs - previous.calledAtMs;
    if (gap <= RETENTION_TTL_MS[retentionInForce(previous)]) return null;
    const warm = Math.min(call.promptTokens, Math.round(previous.promptTokens * normalReuse));
    const read = Math.min(warm, call.promptTokens - (call.tokensAfterBreak ?? 0));
    return read > 0 ? read : null;
  });
}

function callCost(call: AdvisedCall, cached: number, prices: PriceTable, retention: Retention): number {
  const written = call.promptTokens - cached;
  return (
    (cached * prices.cachedInputPerMillion +
      written * writePriceFor(prices, retention) +
      call.completionTokens * prices.outputPerMillion) /
    PER_MILLION
  );
}

/**
 * @param calls one session's calls, oldest first, or several sessions' calls grouped by `sessionId`.
 * @param pricesOf the price table of a model (the price book's, as the calls were priced).
 */
export function adviseRetention(
  calls: readonly AdvisedCall[],
  pricesOf: (model: string) => PriceTable,
): RetentionAdvice {
  const before = predecessors(calls);
  const reads = warmReads(calls, before);
  const pricesOfCall = calls.map((call) => pricesOf(call.model));
  const sold = new Set(pricesOfCall.flatMap((prices) => offeredRetentions(prices)));
  const compared = RETENTIONS.filter((retention) => CLASSIC_RETENTIONS.includes(retention) || sold.has(retention));
  const retentions = compared.map((retention): RetentionCost => {
    let cost = 0;
    let hits = 0;
    let offered = true;
    calls.forEach((call, index) => {
      const prices = pricesOfCall[index] ?? pricesOf(call.model);
      if (!offeredRetentions(prices).includes(retention)) offered = false;
      const previous = before[index];
      const read = reads[index] ?? null;
      const hit =
        read !== null && previous !== undefined && call.calledAtMs - previous.calledAtMs <= RETENTION_TTL_MS[retention];
      if (hit) hits += 1;
      cost += callCost(call, hit ? read : 0, prices, retention);
    });
    return { retention, cost, hits, misses: calls.length - hits, offered };
  });
  const ranked = retentions.filter((r) => r.offered).sort((a, b) => a.cost - b.cost);
  const cheapest = calls.length === 0 ? null : (ranked[0] ?? null);
  const defaultRetention = pricesOfCall[0]?.defaultRetention ?? "5m";
  const byDefault = retentions.find((r) => r.retention === defaultRetention);
  return {
    calls: calls.length,
    recordedCost: calls.reduce((sum, call) => sum + call.cost, 0),
    retentions,
    defaultRetention,
    cheapest: cheapest?.retention ?? null,
    savingVsDefault: cheapest !== null && byDefault !== undefined ? byDefault.cost - cheapest.cost : 0,
    savingVsNext: cheapest !== null && ranked[1] !== undefined ? ranked[1].cost - cheapest.cost : 0,
  };
}
