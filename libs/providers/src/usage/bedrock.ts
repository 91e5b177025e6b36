// AWS Bedrock Converse `usage` (TokenUsage). inputTokens excludes the cache: the prompt is
// inputTokens + cacheReadInputTokens + cacheWriteInputTokens. No miss diagnostic.

import { usageAndEnvelope } from "./json-fields";
import type { NormalizedUsage } from "./normalized";

export function parseBedrockConverseUsage(json: string): NormalizedUsage {
  const { usage } = usageAndEnvelope(json, "usage");
  const inputTokens = usage.requiredCount("inputTokens");
  const cacheRead = usage.optionalCount("cacheReadInputTokens");
  const cacheWrite = usage.optionalCount("cacheWriteInputTokens");
  const completionTokens = usage.requiredCount("outputTokens");
  return {
    promptTokens: inputTokens + cacheRead + cacheWrite,
    cachedTokens: cacheRead,
    cacheCreationTokens: cacheWrite,
    cacheCreation1hTokens: 0,
    completionTokens,
    providerReport: {
      cacheMissReason: "",
      cacheReadInputTokens: cacheRead,
      cacheCreationInputTokens: cacheWrite,
      openaiCachedTokens: 0,
      rawJson: "",
    },
  };
}
