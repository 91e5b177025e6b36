// What every wire format is: a plug-in that turns the provider-neutral ChatRequest into one
// provider's request body. Each format is one file in this folder and one line in registry.ts.
//
// Shared rules, the same in every format:
// - The request's tools are already in wire order and checked (tool-order.ts); formats emit them
//   as given.
// - System text is the non-empty section texts joined with SYSTEM_SECTION_SEPARATOR, in the given
//   order, unless the format has system blocks of its own.
// - Parts allowed per role: system → text; user → text, image; assistant → text, tool_call;
//   tool → tool_result. Anything else, and a message without parts, is a ValidationError, so a
//   malformed history fails loudly instead of being re-shaped differently by each format.
// - Wire objects are built field by field from the typed model: internal fields that ride along
//   on message objects at runtime (messageId, seq, localDate ...) never reach a provider.

import { type CanonicalUtf8, canonicalJson, canonicalJsonUtf8 } from "@prefix-guard/canonical-json";
import { ValidationError } from "@prefix-guard/errors";
import type { ChatMessage, ChatRequest, ContentPart, Role, SystemSection } from "../model";
import type { CacheMode, CacheRetention } from "../provider-cache";

export interface SerializeOptions {
  /**
   * Formats that place cache breakpoints (Anthropic, Bedrock, OpenAI gpt-5.6+): the smallest
   * cumulative prefix, in estimated tokens, that may carry one; the model family's
   * minimumCacheableTokens in the provider catalogue. Omitted means 0: breakpoints are placed by
   * position alone.
   */
  readonly cacheMinimumTokens?: number;
  /**
   * Formats that place cache breakpoints: the first part of the first message is the summary slot
   * (attachSummary puts it there), the head of the history that stays byte-stable until the next
   * compaction.
   */
  readonly summaryHead?: boolean;
}

/**
 * Where a response in this dialect reports its usage, with the field names as the provider documents
 * them, and the `provider` to pass with it to RecordUsage's raw intake (cache-monitor parses it).
 */
export interface UsageFields {
  readonly provider: string;
  readonly promptTokens: string;
  readonly cachedTokens: string;
  /** null: the dialect reports no cache writes. */
  readonly cacheWriteTokens: string | null;
  readonly outputTokens: string;
}

export interface WireFormatPlugin<Body = unknown> {
  /** The id used in the domain and in logs: "openai_chat". */
  readonly id: string;
  /** The usage the provider answers a body of this format with. */
  readonly usage: UsageFields;
  /** Its value in prefixguard.assembly.v1.WireFormat (the proto enum), so the contract maps to it. */
  readonly protoValue: number;
  /** The cache retentions the provider's API takes in this format (BuildRequest's `cache.retention`). */
  readonly cacheRetentions: readonly CacheRetention[];
  /** The cache modes (BuildRequest's `cache.mode`) the format can express, `[]` for none. */
  readonly cacheModes: readonly CacheMode[];
  /**
   * The body as plain data, for readers and tests. A `tail` message goes after the request's
   * messages as its own message: never merged into the last one, never carrying a cache marker, so
   * everything before it is byte for byte the body without it (a compaction request).
   */
  serialize(request: ChatRequest, options: SerializeOptions, tail?: ChatMessage): Body;
  /**
   * serialize(request, options, tail) with the messages whose content the format has written
   * before (the stored history, unchanged from build to build) as the JsonFragments it wrote them
   * to: its canonical JSON is canonicalJson(serialize(request, options, tail)), byte for byte.
   */
  jsonBody(request: ChatRequest, options: SerializeOptions, tail?: ChatMessage): unknown;
}

/** The body as canonical JSON text (readers and tests; the build path uses serializeUtf8). */
export function serializeJson(
  plugin: WireFormatPlugin,
  request: ChatRequest,
  options: SerializeOptions,
  tail?: ChatMessage,
): string {
  return canonicalJson(plugin.jsonBody(request, options, tail));
}

/** The body as canonical JSON in UTF-8, and its token units: what a build sends, hashes and estimates. */
export function serializeUtf8(
  plugin: WireFormatPlugin,
  request: ChatRequest,
  options: SerializeOptions,
  tail?: ChatMessage,
): CanonicalUtf8 {
  return canonicalJsonUtf8(plugin.jsonBody(request, options, tail));
}

export const SYSTEM_SECTION_SEPARATOR = "\n\n";

/** The system prompt as one string: non-empty section texts joined in the given order. */
export function systemText(sections: readonly SystemSection[]): string {
  return sections
    .map((section) => section.text)
    .filter((text) => text.length > 0)
    .join(SYSTEM_SECTION_SEPARATOR);
}

const ALLOWED_PARTS: Readonly<Record<Role, readonly ContentPart["type"][]>> = {
  system: ["text"],
  user: ["text", "image"],
  assistant: ["text", "tool_call"],
  tool: ["tool_result"],
};

/** @throws ValidationError naming the first message with an unknown role, no parts or a part its role may not carry. */
export function assertMessagesWellFormed(messages: readonly ChatMessage[]): void {
  messages.forEach((message, index) => {
    const allowed = ALLOWED_PARTS[message.role] as readonly string[] | undefined;
    if (allowed === undefined) {
      throw new ValidationError(`messages[${index}].role`, `unknown role ${JSON.stringify(message.role)}`);
    }
    if (message.content.length === 0) {
      throw new ValidationError(`messages[${index}].content`, "must contain at least one part");
    }
    message.content.forEach((part, partIndex) => {
      if (!allowed.includes(part.type)) {
        throw new ValidationError(
          `messages[${index}].content[${partIndex}].type`,
          `${JSON.stringify(part.type)} is not allowed in a ${message.role} message`,
        );
      }
    });
  });
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export type TextPart = Extract<ContentPart, { type: "text" }>;
export type ImagePart = Extract<ContentPart, { type: "image" }>;
export type ToolCallPart = Extract<ContentPart, { type: "tool_call" }>;
export type ToolResultPart = Extract<ContentPart, { type: "tool_result" }>;

export function partsOfType<T extends ContentPart["type"]>(
  parts: readonly ContentPart[],
  type: T,
): Extract<ContentPart, { type: T }>[] {
  return parts.filter((part): part is Extract<ContentPart, { type: T }> => part.type === type);
}

/**
 * OpenAI's retention values, Chat Completions and Responses alike: `prompt_cache_retention` before
 * gpt-5.6, `prompt_cache_options.ttl` from it (the catalogue says which family takes which).
 */
export const OPENAI_CACHE_RETENTIONS: readonly CacheRetention[] = ["in_memory", "24h", "30m"];

/** OpenAI gpt-5.6+ `prompt_cache_options.mode`. */
export const OPENAI_CACHE_MODES: readonly CacheMode[] = ["implicit", "explicit"];

/** What OpenAI bodies carry in `prompt_cache_options`: only the fields that are set. */
export interface OpenAiPromptCacheOptions {
  readonly mode?: "implicit" | "explicit";
  readonly ttl?: string;
  readonly comparison_response_id?: string;
}

/**
 * OpenAI's opt-in cache fields (Chat Completions and Responses alike). gpt-5.6 and later
 * (providerCache.promptCacheOptions): `prompt_cache_options` with the mode, the ttl and the
 * diagnostics request `comparison_response_id` that are set, nothing when none is, and never
 * `prompt_cache_retention` (OpenAI refuses a body with both). Earlier models: `prompt_cache_retention`
 * and `prompt_cache_options.comparison_response_id`, as before. None asked: no field at all.
 */
export function openAiCacheFields(request: ChatRequest): {
  readonly prompt_cache_retention?: string;
  readonly prompt_cache_options?: OpenAiPromptCacheOptions;
} {
  const options = request.providerCache;
  const api = options?.promptCacheOptions;
  if (api !== undefined) {
    const fields: OpenAiPromptCacheOptions = {
      ...(api.mode === undefined ? {} : { mode: api.mode }),
      ...(api.ttl === undefined ? {} : { ttl: api.ttl }),
      ...(options?.previousResponseId === undefined ? {} : { comparison_response_id: options.previousResponseId }),
    };
    return Object.keys(fields).length === 0 ? {} : { prompt_cache_options: fields };
  }
  return {
    ...(options?.retention === undefined ? {} : { prompt_cache_retention: options.retention }),
    ...(options?.previousResponseId === undefined
      ? {}
      : { prompt_cache_options: { comparison_response_id: options.previousResponseId } }),
  };
}
