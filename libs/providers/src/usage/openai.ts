// OpenAI Chat Completions `usage` and Responses `usage`. The prompt count includes the cached tokens
// (prompt_tokens_details.cached_tokens / input_tokens_details.cached_tokens). Writes are billed apart
// from gpt-5.6 (1.25× input) and reported as `*_tokens_details.cache_write_tokens`; read there, or
// beside the counts where a gateway reports them. The miss diagnostic is
// `prompt_cache_diagnostics` ({type: "cache_miss", reason, cache_missed_tokens}), on the response
// beside `usage` (or inside it, where a harness put it there).

import { ValidationError } from "@prefix-guard/errors";
import { isObject, type JsonObject, type UsageFields, usageAndEnvelope } from "./json-fields";
import type { NormalizedUsage } from "./normalized";

interface OpenAiShape {
  readonly prompt: string;
  readonly details: string;
  readonly completion: string;
}

const CHAT: OpenAiShape = {
  prompt: "prompt_tokens",
  details: "prompt_tokens_details",
  completion: "completion_tokens",
};
const RESPONSES: OpenAiShape = {
  prompt: "input_tokens",
  details: "input_tokens_details",
  completion: "output_tokens",
};

function diagnosticsOf(usage: UsageFields, envelope: JsonObject): { reason: string; rawJson: string } | null {
  const inUsage = usage.object.prompt_cache_diagnostics;
  const diagnostics = inUsage ?? envelope.prompt_cache_diagnostics;
  if (diagnostics === undefined || diagnostics === null) return null;
  const field =
    inUsage !== undefined ? usage.field("prompt_cache_diagnostics") : "raw.usage_json.prompt_cache_diagnostics";
  if (!isObject(diagnostics)) throw new ValidationError(field, "must be a JSON object");
  const type = diagnostics.type;
  const reason = diagnostics.reason;
  // Only a cache_miss names a reason; any other outcome is kept for operators but is no miss.
  const isMiss = type === undefined || type === "cache_miss";
  return {
    reason: isMiss && typeof reason === "string" ? reason : "",
    rawJson: JSON.stringify(diagnostics),
  };
}

function parseOpenAi(json: string, shape: OpenAiShape): NormalizedUsage {
  const { usage, envelope } = usageAndEnvelope(json, "usage");
  const promptTokens = usage.requiredCount(shape.prompt);
  const details = usage.child(shape.details);
  const cachedTokens = details?.optionalCount("cached_tokens") ?? 0;
  if (cachedTokens > promptTokens)
    throw new ValidationError(
      details?.field("cached_tokens") ?? usage.field(shape.details),
      `${cachedTokens} exceeds ${shape.prompt} ${promptTokens}`,
    );
  // gpt-5.6+ report writes in the details object (billed at 1.25× input); some gateways put them
  // beside the counts. optionalCount answers 0 for an absent field, so presence decides the source.
  const inDetails = details?.object.cache_write_tokens;
  const cacheCreationTokens =
    inDetails !== undefined && inDetails !== null
      ? (details?.optionalCount("cache_write_tokens") ?? 0)
      : usage.optionalCount("cache_write_tokens");
  const completionTokens = usage.requiredCount(shape.completion);
  const diagnostics = diagnosticsOf(usage, envelope);
  return {
    promptTokens,
    cachedTokens,
    cacheCreationTokens,
    cacheCreation1hTokens: 0,
    completionTokens,
    providerReport: {
      cacheMissReason: diagnostics?.reason ?? "",
      cacheReadInputTokens: 0,
      cacheCreationInputTokens: cacheCreationTokens,
      openaiCachedTokens: cachedTokens,
      rawJson: diagnostics?.rawJson ?? "",
    },
  };
}

export function parseOpenAiChatUsage(json: string): NormalizedUsage {
  return parseOpenAi(json, CHAT);
}

export function parseOpenAiResponsesUsage(json: string): NormalizedUsage {
  return parseOpenAi(json, RESPONSES);
}
