// Anthropic Messages: one system block per non-empty section, user and assistant turns that
// alternate (consecutive same-role messages are joined, tool results travel in user turns and
// come first in them), and cache breakpoints placed by anthropic-breakpoints.ts.

import { JsonFragment } from "@prefix-guard/canonical-json";
import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import { ValidationError } from "@prefix-guard/errors";
import type { ChatMessage, ChatRequest, ContentPart, ToolDefinition } from "../model";
import type { CacheRetention } from "../provider-cache";
import {
  type Turn as AlternatingTurn,
  base64DataUrl,
  chooseTurnBreakpoints,
  mergeTurns,
  summaryHeadBlock,
  type TurnBlock,
  toolInputObject,
  turnFragment,
  turnRoleOf,
} from "./alternating-turns";
import type {
  AnthropicContentBlock,
  AnthropicImageSource,
  AnthropicMessage,
  AnthropicMessagesBody,
  AnthropicSystemBlock,
  AnthropicTool,
} from "./anthropic-body";
import { blockTokens, cacheControlFor, markLastIf, requireMinimumTokens, toolTokens } from "./anthropic-breakpoints";
import { MessageMemo } from "./message-memo";
import {
  assertMessagesWellFormed,
  type ImagePart,
  type SerializeOptions,
  type ToolResultPart,
  type WireFormatPlugin,
} from "./wire-format";

/** Anthropic requires max_tokens; used when the request does not set maxOutputTokens. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

type Block = TurnBlock<AnthropicContentBlock>;
type Turn = AlternatingTurn<Block>;

function blocksOf(message: ChatMessage, index: number): Turn {
  const field = `messages[${index}]`;
  if (message.role === "system") {
    throw new ValidationError(`${field}.role`, "Anthropic has no system role in messages; use request.system");
  }
  return {
    role: turnRoleOf(message.role),
    blocks: message.content.map((part, partIndex) => {
      const wire = anthropicBlock(part, `${field}.content[${partIndex}]`);
      return {
        kind: part.type,
        wire,
        tokens: blockTokens(wire),
        json: JsonFragment.of(wire, `${field}.content[${partIndex}]`),
      };
    }),
  };
}

const converted = new MessageMemo(blocksOf);

/**
 * The body in one of two representations of its message blocks: plain objects, or the fragments
 * written once per stored message. Placement and everything else is the same code for both.
 */
function anthropicBody(
  request: ChatRequest,
  options: SerializeOptions,
  turnOf: (message: ChatMessage, index: number) => Turn,
  render: (block: Block) => AnthropicContentBlock | JsonFragment,
  reusable: (turn: Turn) => boolean,
  tail: ChatMessage | undefined,
) {
  assertMessagesWellFormed(tail === undefined ? request.messages : [...request.messages, tail]);
  const minimumTokens = requireMinimumTokens(options.cacheMinimumTokens ?? 0);
  const cache = request.providerCache;
  const marker = cacheControlFor(anthropicRetention(cache?.retention));
  const system = request.system
    .filter((section) => section.text.length > 0)
    .map((section): AnthropicSystemBlock => ({ type: "text", text: section.text }));
  const tools = request.tools.map(anthropicTool);
  const turns = request.messages.map(turnOf);
  const summaryBlock = options.summaryHead === true ? summaryHeadBlock(turns) : undefined;
  const merged = mergeTurns(turns);
  const automatic = cache?.automatic === true;
  const chosen = chooseTurnBreakpoints({
    tools: tools.map(toolTokens),
    system: system.map((block) => estimateTokens(block.text)),
    turns: merged,
    summaryBlock,
    minimumTokens,
    automaticNewestTurn: automatic,
  });
  return {
    model: request.model,
    max_tokens: request.maxOutputTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    ...(system.length > 0 ? { system: markLastIf(system, chosen.systemEnd, marker) } : {}),
    ...(tools.length > 0 ? { tools: markLastIf(tools, chosen.toolsEnd, marker) } : {}),
    messages: [
      ...merged.map((turn, turnIndex) => {
        const marked = turn.blocks.some((_block, blockIndex) => chosen.blocks.has(`${turnIndex}:${blockIndex}`));
        if (!marked && reusable(turn)) return turnFragment(turn);
        return {
          role: turn.role,
          content: turn.blocks.map((block, blockIndex) =>
            chosen.blocks.has(`${turnIndex}:${blockIndex}`) ? { ...block.wire, cache_control: marker } : render(block),
          ),
        };
      }),
      // Its own message after the placed ones: Anthropic joins consecutive user turns itself, and
      // joining it here would rewrite the bytes of the last turn and move no marker onto it.
      ...(tail === undefined ? [] : [anthropicTail(tail, request.messages.length)]),
    ],
    // Automatic caching marks the last cacheable block: with a tail, the tail. The field is there
    // either way, so the body before the tail is still byte for byte the body without it.
    ...(automatic ? { cache_control: marker } : {}),
    ...(cache?.previousResponseId === undefined
      ? {}
      : { diagnostics: { previous_message_id: cache.previousResponseId } }),
  };
}

/** Validation lets only Anthropic's values through for this format; anything else is a bug upstream. */
function anthropicRetention(retention: CacheRetention | undefined): "5m" | "1h" | undefined {
  if (retention === undefined || retention === "5m" || retention === "1h") return retention;
  throw new ValidationError("cache.retention", `${JSON.stringify(retention)} is not an Anthropic cache TTL`);
}

function anthropicTail(tail: ChatMessage, index: number): AnthropicMessage {
  const turn = blocksOf(tail, index);
  return { role: turn.role, content: turn.blocks.map((block) => block.wire) };
}

export const anthropicMessages: WireFormatPlugin<AnthropicMessagesBody> = {
  id: "anthropic_messages",
  usage: {
    provider: "anthropic",
    // Anthropic's input_tokens count only what was neither read from nor written to the cache.
    promptTokens: "usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens",
    cachedTokens: "usage.cache_read_input_tokens",
    cacheWriteTokens: "usage.cache_creation_input_tokens",
    outputTokens: "usage.output_tokens",
  },
  cacheRetentions: ["5m", "1h"],
  cacheModes: ["automatic"],
  protoValue: 2,
  serialize: (request, options, tail) =>
    anthropicBody(
      request,
      options,
      blocksOf,
      (block) => block.wire,
      () => false,
      tail,
    ) as AnthropicMessagesBody,
  jsonBody: (request, options, tail) =>
    anthropicBody(
      request,
      options,
      (message, index) => converted.of(message, index),
      (block) => block.json,
      (turn) => converted.holds(turn),
      tail,
    ),
};

function anthropicTool(tool: ToolDefinition): AnthropicTool {
  return { name: tool.name, description: tool.description, input_schema: tool.inputSchema };
}

function anthropicBlock(part: ContentPart, field: string): AnthropicContentBlock {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text };
    case "image":
      return { type: "image", source: anthropicImageSource(part, `${field}.url`) };
    case "tool_call":
      return {
        type: "tool_use",
        id: part.callId,
        name: part.name,
        input: toolInputObject(part.argumentsJson, `${field}.argumentsJson`),
      };
    case "tool_result":
      return toolResultBlock(part);
  }
}

function toolResultBlock(part: ToolResultPart): AnthropicContentBlock {
  return {
    type: "tool_result",
    tool_use_id: part.callId,
    content: part.text,
    ...(part.isError ? { is_error: true as const } : {}),
  };
}

function anthropicImageSource(part: ImagePart, field: string): AnthropicImageSource {
  if (!part.url.startsWith("data:")) return { type: "url", url: part.url };
  const { mediaType, data } = base64DataUrl(part.url, field, "Anthropic");
  return { type: "base64", media_type: mediaType.length > 0 ? mediaType : part.mediaType, data };
}
