// Retentions, in two vocabularies. A request opts in with the provider's own value (Anthropic and
// Bedrock `ttl: "5m" | "1h"`, OpenAI `prompt_cache_retention: "in_memory" | "24h"` before gpt-5.6,
// `prompt_cache_options.ttl: "30m"` from it, Azure also "12h"). Judging expiry and pricing writes
// needs how long the entry lives: OpenAI's in-memory default evicts after 5–10 idle minutes, so it
// is judged as 5m (a longer gap is an expiry more often than not).

/** Values a request may carry, as the providers spell them. */
export const REQUEST_RETENTIONS = ["5m", "1h", "in_memory", "24h", "30m", "12h"] as const;
export type RequestRetention = (typeof REQUEST_RETENTIONS)[number];

/** How long a written prefix lives, shortest first. */
export const JUDGED_RETENTIONS = ["5m", "30m", "1h", "12h", "24h"] as const;
export type Retention = (typeof JUDGED_RETENTIONS)[number];

export const RETENTION_TTL_MS: Readonly<Record<Retention, number>> = {
  "5m": 5 * 60_000,
  "30m": 30 * 60_000,
  "1h": 60 * 60_000,
  "12h": 12 * 60 * 60_000,
  "24h": 24 * 60 * 60_000,
};

const JUDGED: Readonly<Record<RequestRetention, Retention>> = {
  "5m": "5m",
  in_memory: "5m",
  "30m": "30m",
  "1h": "1h",
  "12h": "12h",
  "24h": "24h",
};

/** How long an entry written with a request's retention value lives. */
export function judgedRetention(value: RequestRetention): Retention {
  return JUDGED[value];
}

/** The judged retention of a stored request value, or null for "" and values this build does not know. */
export function judgedRetentionOf(value: string): Retention | null {
  return (REQUEST_RETENTIONS as readonly string[]).includes(value) ? JUDGED[value as RequestRetention] : null;
}

export function isRequestRetention(value: string): value is RequestRetention {
  return (REQUEST_RETENTIONS as readonly string[]).includes(value);
}
