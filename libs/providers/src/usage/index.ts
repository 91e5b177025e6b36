// parseProviderUsage: a provider's usage object, verbatim, into the normalized record. Pure.

import { ValidationError } from "@prefix-guard/errors";
import { parseAnthropicUsage } from "./anthropic";
import { parseBedrockConverseUsage } from "./bedrock";
import { parseDeepSeekUsage } from "./deepseek";
import { parseGeminiUsage } from "./gemini";
import { USAGE_JSON_FIELD } from "./json-fields";
import type { NormalizedUsage, RawProvider } from "./normalized";
import { SUPPORTED_PROVIDERS } from "./normalized";
import { parseOpenAiChatUsage, parseOpenAiResponsesUsage } from "./openai";

export { type NormalizedUsage, type ProviderCacheReport, type RawProvider, SUPPORTED_PROVIDERS } from "./normalized";

/** Large enough for any usage object with its diagnostics; the same bound as a typed provider report. */
export const MAX_USAGE_JSON_CHARS = 64_000;

const PARSERS: Readonly<Record<RawProvider, (json: string) => NormalizedUsage>> = {
  openai_chat: parseOpenAiChatUsage,
  openai_responses: parseOpenAiResponsesUsage,
  anthropic: parseAnthropicUsage,
  gemini: parseGeminiUsage,
  bedrock_converse: parseBedrockConverseUsage,
  deepseek: parseDeepSeekUsage,
};

export function isRawProvider(provider: string): provider is RawProvider {
  return (SUPPORTED_PROVIDERS as readonly string[]).includes(provider);
}

/** @throws ValidationError naming `raw.provider`, `raw.usage_json` or the offending field inside it. */
export function parseProviderUsage(provider: string, json: string): NormalizedUsage {
  if (!isRawProvider(provider))
    throw new ValidationError(
      "raw.provider",
      `must be one of ${SUPPORTED_PROVIDERS.join(", ")} (got ${JSON.stringify(provider.slice(0, 100))})`,
    );
  if (json.length > MAX_USAGE_JSON_CHARS)
    throw new ValidationError(USAGE_JSON_FIELD, `must be at most ${MAX_USAGE_JSON_CHARS} characters`);
  if (json.trim() === "") throw new ValidationError(USAGE_JSON_FIELD, "is required");
  return PARSERS[provider](json);
}
