// How long a provider keeps a written prefix. The retentions and their TTLs are the provider
// catalogue's (libs/providers): Anthropic's 5-minute default and 1-hour ttl, OpenAI's in-memory
// default (judged as 5m: it evicts after 5–10 idle minutes), 24-hour extended retention and the
// 30-minute `prompt_cache_options.ttl` of gpt-5.6+, Azure's 12h. A hit refreshes the entry, so what
// decides expiry is the gap since the session's previous call, not since the write.

import { JUDGED_RETENTIONS, judgedRetentionOf, type Retention } from "@prefix-guard/providers";

export { expiredAfter, RETENTION_TTL_MS, type Retention } from "@prefix-guard/providers";

export const RETENTIONS = JUDGED_RETENTIONS;

/**
 * The retention the previous call left the cache under: the one its build asked for, when the
 * build opted in; otherwise a 1-hour write seen in its usage (Anthropic's `ephemeral_1h_input_tokens`)
 * means 1h, and anything else is its model's default (the catalogue's, filled in by the application;
 * 5m when absent).
 */
export function retentionInForce(
  previous: {
    readonly cacheCreation1hTokens?: number;
    readonly cacheRetention?: string;
    readonly defaultRetention?: Retention;
  } | null,
): Retention {
  const opted = judgedRetentionOf(previous?.cacheRetention ?? "");
  if (opted !== null) return opted;
  if ((previous?.cacheCreation1hTokens ?? 0) > 0) return "1h";
  return previous?.defaultRetention ?? "5m";
}
