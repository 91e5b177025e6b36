// Anthropic Messages `usage`. input_tokens counts only the uncached part after the last breakpoint,
// so the prompt is input_tokens + cache_read_input_tokens + cache_creation_input_tokens. Writes are
// split by TTL in `cache_creation` {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}. The miss
// diagnostic (cache diagnostics beta) is `cache_miss_reason` {type, cache_missed_input_tokens},
// returned under the response's `diagnostics`; it is read there or inside `usage`.

import { ValidationError } from "@prefix-guard/errors";
import { isObject, type JsonObject, type UsageFields, usageAndEnvelope } from "./json-fields";
import type { NormalizedUsage } from "./normalized";

/** Reasons that say the comparison could not be made, not that the cache missed. */
const INCONCLUSIVE_REASONS = new Set(["previous_message_not_found", "unavailable"]);

function missReasonOf(usage: UsageFields, envelope: JsonObject): { reason: string; rawJson: string } | null {
  const diagnostics = envelope.diagnostics;
  const candidates: [unknown, string][] = [
    [usage.object.cache_miss_reason, usage.field("cache_miss_reason")],
    [isObject(diagnostics) ? diagnostics.cache_miss_reason : undefined, "raw.usage_json.diagnostics.cache_miss_reason"],
    [envelope.cache_miss_reason, "raw.usage_json.cache_miss_reason"],
  ];
  const found = candidates.find(([value]) => value !== undefined && value !== null);
  if (found === undefined) return null;
  const [value, field] = found;
  if (!isObject(value)) throw new ValidationError(field, "must be a JSON object");
  const type = typeof value.type === "string" ? value.type : "";
  return { reason: INCONCLUSIVE_REASONS.has(type) ? "" : type, rawJson: JSON.stringify(value) };
}

export function parseAnthropicUsage(json: string): NormalizedUsage {
  const { usage, envelope } = usageAndEnvelope(json, "usage");
  const inputTokens = usage.requiredCount("input_tokens");
  const cacheRead = usage.optionalCount("cache_read_input_tokens");
  const split = usage.child("cache_creation");
  const fiveMinutes = split?.optionalCount("ephemeral_5m_input_tokens") ?? 0;
  const oneHour = split?.optionalCount("ephemeral_1h_input_tokens") ?? 0;
  const creationGiven = usage.object.cache_creation_input_tokens;
  const cacheCreation =
    creationGiven === undefined || creationGiven === null
      ? fiveMinutes + oneHour
      : usage.optionalCount("cache_creation_input_tokens");
  if (oneHour > cacheCreation)
    throw new ValidationError(
      split?.field("ephemeral_1h_input_tokens") ?? usage.field("cache_creation"),
      `${oneHour} exceeds cache_creation_input_tokens ${cacheCreation}`,
    );
  const completionTokens = usage.requiredCount("output_tokens");
  const miss = missReasonOf(usage, envelope);
  return {
    promptTokens: inputTokens + cacheRead + cacheCreation,
    cachedTokens: cacheRead,
    cacheCreationTokens: cacheCreation,
    cacheCreation1hTokens: oneHour,
    completionTokens,
    providerReport: {
      cacheMissReason: miss?.reason ?? "",
      cacheReadInputTokens: cacheRead,
      cacheCreationInputTokens: cacheCreation,
      openaiCachedTokens: 0,
      rawJson: miss?.rawJson ?? "",
    },
  };
}
