// How long a provider keeps a written prefix. The three retentions the providers sell: Anthropic's
// 5-minute default and 1-hour `cache_control.ttl`, OpenAI's `prompt_cache_retention: "24h"` (its
// in-memory default evicts after 5–10 idle minutes, so it is judged as 5m: a longer gap is an expiry
// more often than not). A hit refreshes the entry, so what decides expiry is the gap since the
// session's previous call, not since the write.

export const RETENTIONS = ["5m", "1h", "24h"] as const;
export type Retention = (typeof RETENTIONS)[number];

export const RETENTION_TTL_MS: Readonly<Record<Retention, number>> = {
  "5m": 5 * 60_000,
  "1h": 60 * 60_000,
  "24h": 24 * 60 * 60_000,
};

/** What a build's opt-in retention (BuildRequest `cache.retention`) keeps a prefix for. */
const OPTED_RETENTIONS: Readonly<Record<string, Retention>> = { "5m": "5m", in_memory: "5m", "1h": "1h", "24h": "24h" };

/**
 * The retention the previous call left the cache under: the one its build asked for, when the
 * build opted in; otherwise a 1-hour write seen in its usage (Anthropic's `ephemeral_1h_input_tokens`)
 * means 1h, and anything else is the providers' 5-minute default.
 */
export function retentionInForce(
  previous: { readonly cacheCreation1hTokens?: number; readonly cacheRetention?: string } | null,
): Retention {
  const opted = OPTED_RETENTIONS[previous?.cacheRetention ?? ""];
  if (opted !== undefined) return opted;
  return (previous?.cacheCreation1hTokens ?? 0) > 0 ? "1h" : "5m";
}

/** True when the cache entry the previous call left had expired before `idleMs` passed. */
export function expiredAfter(idleMs: number, retention: Retention): boolean {
  return idleMs > RETENTION_TTL_MS[retention];
}
