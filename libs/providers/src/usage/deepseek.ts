// DeepSeek Chat Completions `usage` (context caching on disk): the prompt is
// prompt_cache_hit_tokens + prompt_cache_miss_tokens, the hit part read from the cache. DeepSeek
// bills no writes apart and gives no miss diagnostic.

import { usageAndEnvelope } from "./json-fields";
import type { NormalizedUsage } from "./normalized";

export function parseDeepSeekUsage(json: string): NormalizedUsage {
  const { usage } = usageAndEnvelope(json, "usage");
  const hit = usage.requiredCount("prompt_cache_hit_tokens");
  const miss = usage.requiredCount("prompt_cache_miss_tokens");
  const completionTokens = usage.requiredCount("completion_tokens");
  return {
    promptTokens: hit + miss,
    cachedTokens: hit,
    cacheCreationTokens: 0,
    cacheCreation1hTokens: 0,
    completionTokens,
    providerReport: null,
  };
}
