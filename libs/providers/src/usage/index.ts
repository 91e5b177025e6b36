// parseProviderUsage: a provider's usage object, verbatim, into the normalized record. Pure.

import { ValidationError } from "@prefix-guard/errors";
import { parseAnthropicUsage } from "./anthropic";
import { parseBedrockConverseUsage } from "./bedrock";
import { parseDeepSeekUsage } from "./deepseek";
import { parseGeminiUsage } from "./gemini";
import { USAGE_JSON_FIELD } from "./json-fields";
import type { NormalizedUsage } from "./normalized";
import { parseOpenAiChatUsage, parseOpenAiResponsesUsage } from "./openai";

export type { NormalizedUsage, ProviderCacheReport } from "./normalized";

/** Large enough for any usage object with its diagnostics; the same bound as a typed provider report. */
export const MAX_USAGE_JSON_CHARS = 64_000;

/** The usage dialects, by the name RecordUsage's `raw.provider` gives: the one list of them. */
const PARSERS = {
  openai_chat: parseOpenAiChatUsage,
  openai_responses: parseOpenAiResponsesUsage,
  anthropic: parseAnthropicUsage,
  gemini: parseGeminiUsage,
  bedrock_converse: parseBedrockConverseUsage,
  deepseek: parseDeepSeekUsage,
} as const satisfies Readonly<Record<string, (json: string) => NormalizedUsage>>;

export type RawProvider = keyof typeof PARSERS;

export const SUPPORTED_PROVIDERS = Object.keys(PARSERS) as readonly RawProvider[];

export function isRawProvider(provider: string): provider is RawProvider {
  return Object.hasOwn(PARSERS, provider);
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
