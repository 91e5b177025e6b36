// Gemini `usageMetadata`. prompt_token_count includes the cached content
// (cached_content_token_count). Output is candidates_token_count plus thoughts_token_count: thinking
// tokens are billed at the output price. The REST API spells fields in camelCase
// (promptTokenCount), the SDKs in snake_case; both are read. Gemini reports no cache writes and no
// miss diagnostic.

import { ValidationError } from "@prefix-guard/errors";
import { usageAndEnvelope } from "./json-fields";
import type { NormalizedUsage } from "./normalized";

export function parseGeminiUsage(json: string): NormalizedUsage {
  let { usage } = usageAndEnvelope(json, "usageMetadata");
  if (usage.path === "raw.usage_json" && usage.object.usage_metadata !== undefined)
    usage = usageAndEnvelope(json, "usage_metadata").usage;
  const promptTokens = usage.requiredCountOf("prompt_token_count", "promptTokenCount");
  const cachedTokens = usage.optionalCountOf("cached_content_token_count", "cachedContentTokenCount");
  if (cachedTokens > promptTokens)
    throw new ValidationError(
      usage.field("cached_content_token_count"),
      `${cachedTokens} exceeds prompt_token_count ${promptTokens}`,
    );
  const candidates = usage.optionalCountOf("candidates_token_count", "candidatesTokenCount");
  const thoughts = usage.optionalCountOf("thoughts_token_count", "thoughtsTokenCount");
  return {
    promptTokens,
    cachedTokens,
    cacheCreationTokens: 0,
    cacheCreation1hTokens: 0,
    completionTokens: candidates + thoughts,
    providerReport: null,
  };
}
