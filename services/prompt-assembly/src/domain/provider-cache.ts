// Issue 17 §4: the provider cache options a harness may opt into per request — how long the
// provider keeps the cached prefix (retention) and the provider's own miss diagnostics against the
// session's previous response. Both are model-gated: a model not listed in config gets neither, so a
// provider never sees a field that model's API would reject. Nothing asked = the body as before.

import { ValidationError } from "@prefix-guard/errors";
import { checkId } from "@prefix-guard/events/ids";

/** Anthropic cache_control.ttl values, then OpenAI prompt_cache_retention values. */
export const CACHE_RETENTIONS = ["5m", "1h", "in_memory", "24h"] as const;
export type CacheRetention = (typeof CACHE_RETENTIONS)[number];

const MAX_RESPONSE_ID_CHARS = 200;

/** What the harness asked for, checked. */
export interface ProviderCacheRequest {
  readonly retention: CacheRetention | null;
  readonly previousResponseId: string | null;
}

export const NO_PROVIDER_CACHE_REQUEST: ProviderCacheRequest = { retention: null, previousResponseId: null };

/** Model-id prefixes that accept each option (config). */
export interface ProviderCacheGates {
  readonly retentionModels: readonly string[];
  readonly diagnosticsModels: readonly string[];
}

/** What the body carries (ChatRequest.providerCache): only the options the model passed the gate for. */
export interface ProviderCacheOptions {
  readonly retention?: CacheRetention;
  readonly previousResponseId?: string;
}

/**
 * @param accepted the retentions the request's wire format can express (WireFormatPlugin.cacheRetentions).
 * @throws ValidationError naming `cache.retention` or `cache.previous_response_id`.
 */
export function validateProviderCacheRequest(
  input: { readonly retention: string; readonly previousResponseId: string } | undefined,
  accepted: readonly CacheRetention[],
  wireFormatId: string,
): ProviderCacheRequest {
  if (input === undefined) return NO_PROVIDER_CACHE_REQUEST;
  let retention: CacheRetention | null = null;
  if (input.retention !== "") {
    const known = CACHE_RETENTIONS.find((value) => value === input.retention);
    if (known === undefined || !accepted.includes(known))
      throw new ValidationError(
        "cache.retention",
        `must be one of ${accepted.map((value) => JSON.stringify(value)).join(", ")} for ${wireFormatId} ` +
          `(or empty for the provider's default), got ${JSON.stringify(input.retention)}`,
      );
    retention = known;
  }
  const previousResponseId =
    input.previousResponseId === ""
      ? null
      : checkId(input.previousResponseId, "cache.previous_response_id", MAX_RESPONSE_ID_CHARS);
  return { retention, previousResponseId };
}

const listed = (model: string, prefixes: readonly string[]) => prefixes.some((prefix) => model.startsWith(prefix));

/** The options the body carries for `model`: each one only when asked for and the model is listed. */
export function gateProviderCache(
  request: ProviderCacheRequest,
  model: string,
  gates: ProviderCacheGates,
): ProviderCacheOptions {
  return {
    ...(request.retention !== null && listed(model, gates.retentionModels) ? { retention: request.retention } : {}),
    ...(request.previousResponseId !== null && listed(model, gates.diagnosticsModels)
      ? { previousResponseId: request.previousResponseId }
      : {}),
  };
}

/** "claude-opus-4,gpt-5" → ["claude-opus-4", "gpt-5"]; blanks dropped. */
export function parseModelPrefixes(text: string): string[] {
  return text
    .split(",")
    .map((prefix) => prefix.trim())
    .filter((prefix) => prefix.length > 0);
}
