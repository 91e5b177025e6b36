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

/** Reads one dialect's usage object (the JSON RecordUsage's `raw.usage_json` carries) into the normalized record. */
export type UsageParser = (json: string) => NormalizedUsage;

export interface UsageDialects<P extends string> {
  /** The dialect names, in table order. */
  readonly providers: readonly P[];
  isRawProvider(provider: string): provider is P;
  /** @throws ValidationError naming `raw.provider`, `raw.usage_json` or the offending field inside it. */
  parse(provider: string, json: string): NormalizedUsage;
}

/** Parsing by dialect name over a table of parsers: the built-in table below, or a test's. */
export function createUsageDialects<T extends Readonly<Record<string, UsageParser>>>(
  parsers: T,
): UsageDialects<keyof T & string> {
  type P = keyof T & string;
  const providers = Object.keys(parsers) as P[];
  const isRawProvider = (provider: string): provider is P => Object.hasOwn(parsers, provider);
  return {
    providers,
    isRawProvider,
    parse(provider, json) {
      const parser = Object.hasOwn(parsers, provider) ? (parsers[provider] as UsageParser) : undefined;
      if (parser === undefined)
        throw new ValidationError(
          "raw.provider",
          `must be one of ${providers.join(", ")} (got ${JSON.stringify(provider.slice(0, 100))})`,
        );
      if (json.length > MAX_USAGE_JSON_CHARS)
        throw new ValidationError(USAGE_JSON_FIELD, `must be at most ${MAX_USAGE_JSON_CHARS} characters`);
      if (json.trim() === "") throw new ValidationError(USAGE_JSON_FIELD, "is required");
      return parser(json);
    },
  };
}

/** The usage dialects, by the name RecordUsage's `raw.provider` gives: the one list of them. */
const BUILTIN_DIALECTS = createUsageDialects({
  openai_chat: parseOpenAiChatUsage,
  openai_responses: parseOpenAiResponsesUsage,
  anthropic: parseAnthropicUsage,
  gemini: parseGeminiUsage,
  bedrock_converse: parseBedrockConverseUsage,
  deepseek: parseDeepSeekUsage,
});

export type RawProvider = (typeof BUILTIN_DIALECTS.providers)[number];

export const SUPPORTED_PROVIDERS: readonly RawProvider[] = BUILTIN_DIALECTS.providers;

export function isRawProvider(provider: string): provider is RawProvider {
  return BUILTIN_DIALECTS.isRawProvider(provider);
}

/** @throws ValidationError naming `raw.provider`, `raw.usage_json` or the offending field inside it. */
export function parseProviderUsage(provider: string, json: string): NormalizedUsage {
  return BUILTIN_DIALECTS.parse(provider, json);
}
