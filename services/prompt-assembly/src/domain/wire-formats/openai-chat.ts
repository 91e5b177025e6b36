// OpenAI Chat Completions. A message made of exactly one text part is sent as a plain string; any
// other mix is sent as an array of typed parts. An assistant turn with only tool calls has
// `content: null`; each tool result is its own `tool` message. For gpt-5.6 and later, explicit cache
// breakpoints are placed by openai-breakpoints.ts: a system, user or tool message that carries one
// is sent as an array of parts (a string cannot carry it), the same text either way.

import { canonicalJson, JsonFragment } from "@prefix-guard/canonical-json";
import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import type { ChatMessage, ChatRequest, ContentPart, ToolDefinition } from "../model";
import { IMAGE_BLOCK_ESTIMATED_TOKENS, NO_BREAKPOINTS } from "./breakpoint-placement";
import { MessageMemo } from "./message-memo";
import {
  type CachePart,
  chooseOpenAiBreakpoints,
  EXPLICIT_BREAKPOINT,
  markedPartsByUnit,
  type OpenAiPromptCacheBreakpoint,
} from "./openai-breakpoints";
import {
  assertMessagesWellFormed,
  OPENAI_CACHE_MODES,
  OPENAI_CACHE_RETENTIONS,
  type OpenAiPromptCacheOptions,
  openAiCacheFields,
  partsOfType,
  type SerializeOptions,
  systemText,
  type TextPart,
  type ToolCallPart,
  type WireFormatPlugin,
} from "./wire-format";

export interface OpenAiChatTextPart {
  readonly type: "text";
  readonly text: string;
  /** gpt-5.6+: the end of a prefix to cache (openai-breakpoints.ts); never on assistant text. */
  readonly prompt_cache_breakpoint?: OpenAiPromptCacheBreakpoint;
}
export interface OpenAiChatImagePart {
  readonly type: "image_url";
  readonly image_url: { readonly url: string };
  readonly prompt_cache_breakpoint?: OpenAiPromptCacheBreakpoint;
}
export type OpenAiChatContentPart = OpenAiChatTextPart | OpenAiChatImagePart;
export interface OpenAiChatToolCall {
  readonly id: string;
  readonly type: "function";
  readonly function: { readonly name: string; readonly arguments: string };
}
export type OpenAiChatMessage =
  | { readonly role: "system" | "user"; readonly content: string | readonly OpenAiChatContentPart[] }
  | {
      readonly role: "assistant";
      readonly content: string | readonly OpenAiChatTextPart[] | null;
      readonly tool_calls?: readonly OpenAiChatToolCall[];
    }
  | {
      readonly role: "tool";
      readonly tool_call_id: string;
      /** An array only to carry a breakpoint. */
      readonly content: string | readonly OpenAiChatTextPart[];
    };
export interface OpenAiChatTool {
  readonly type: "function";
  readonly function: { readonly name: string; readonly description: string; readonly parameters: unknown };
}
export interface OpenAiChatBody {
  readonly model: string;
  readonly messages: readonly OpenAiChatMessage[];
  readonly tools?: readonly OpenAiChatTool[];
  readonly max_tokens?: number;
  readonly prompt_cache_key?: string;
  readonly prompt_cache_retention?: string;
  readonly prompt_cache_options?: OpenAiPromptCacheOptions;
}

/** A wire message of a stored message, and how the body writes it when it carries no breakpoint. */
interface WireMessage<Written> {
  readonly wire: OpenAiChatMessage;
  readonly written: Written;
}

function chatBody<Written>(
  request: ChatRequest,
  options: SerializeOptions,
  wireMessages: (message: ChatMessage, index: number) => readonly WireMessage<Written>[],
  tail: ChatMessage | undefined,
) {
  assertMessagesWellFormed(tail === undefined ? request.messages : [...request.messages, tail]);
  const system = systemText(request.system);
  const tools = request.tools.map(openAiChatTool);
  const perMessage = request.messages.map(wireMessages);
  const api = request.providerCache?.promptCacheOptions;
  const chosen =
    api === undefined
      ? NO_BREAKPOINTS
      : chooseOpenAiBreakpoints(
          {
            tools: tools.map((tool) => estimateTokens(canonicalJson(tool, "tools"))),
            systemTokens: system.length > 0 ? estimateTokens(system) : null,
            messages: perMessage.map((units) => units.map((unit) => chatCacheParts(unit.wire))),
            summaryHead: options.summaryHead === true,
          },
          api,
          options.cacheMinimumTokens ?? 0,
        );
  const systemMessage: OpenAiChatMessage = { role: "system", content: system };
  const messages: (OpenAiChatMessage | Written)[] =
    system.length > 0 ? [chosen.systemEnd ? withBreakpoints(systemMessage, new Set([0])) : systemMessage] : [];
  const marked = markedPartsByUnit(chosen);
  perMessage.flat().forEach(({ wire, written }, unit) => {
    const parts = marked.get(unit);
    messages.push(parts === undefined ? written : withBreakpoints(wire, parts));
  });
  if (tail !== undefined) messages.push(...openAiChatMessages(tail));
  return {
    model: request.model,
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    ...(request.maxOutputTokens === undefined ? {} : { max_tokens: request.maxOutputTokens }),
    ...(request.promptCacheKey === undefined ? {} : { prompt_cache_key: request.promptCacheKey }),
    ...openAiCacheFields(request),
  };
}

const written = new MessageMemo((message, index) =>
  openAiChatMessages(message).map(
    (wire): WireMessage<JsonFragment> => ({ wire, written: JsonFragment.of(wire, `messages[${index}]`) }),
  ),
);

const plain = (message: ChatMessage): WireMessage<OpenAiChatMessage>[] =>
  openAiChatMessages(message).map((wire) => ({ wire, written: wire }));

export const openAiChat: WireFormatPlugin<OpenAiChatBody> = {
  id: "openai_chat",
  usage: {
    provider: "openai_chat",
    promptTokens: "usage.prompt_tokens",
    cachedTokens: "usage.prompt_tokens_details.cached_tokens",
    cacheWriteTokens: "usage.cache_write_tokens",
    outputTokens: "usage.completion_tokens",
  },
  cacheRetentions: OPENAI_CACHE_RETENTIONS,
  cacheModes: OPENAI_CACHE_MODES,
  protoValue: 1,
  serialize: (request, options, tail) => chatBody(request, options, plain, tail),
  jsonBody: (request, options, tail) =>
    chatBody(request, options, (message, index) => written.of(message, index), tail),
};

/** The parts of a wire message as placement sees them: user, system and tool content takes a breakpoint. */
function chatCacheParts(wire: OpenAiChatMessage): CachePart[] {
  switch (wire.role) {
    case "system":
    case "user":
    case "tool":
      if (typeof wire.content === "string") return [{ tokens: estimateTokens(wire.content), markable: true }];
      return wire.content.map((part) => ({
        tokens: part.type === "text" ? estimateTokens(part.text) : IMAGE_BLOCK_ESTIMATED_TOKENS,
        markable: true,
      }));
    case "assistant": {
      const content = wire.content;
      const texts = content === null ? [] : typeof content === "string" ? [content] : content.map((part) => part.text);
      const calls = (wire.tool_calls ?? []).flatMap((call) => [call.function.name, call.function.arguments]);
      return [{ tokens: [...texts, ...calls].reduce((sum, text) => sum + estimateTokens(text), 0), markable: false }];
    }
  }
}

/** The message with a breakpoint on each of `parts`; a string content becomes one text part to carry it. */
function withBreakpoints(wire: OpenAiChatMessage, parts: ReadonlySet<number>): OpenAiChatMessage {
  const mark = <Part extends OpenAiChatContentPart>(part: Part, index: number): Part =>
    parts.has(index) ? { ...part, prompt_cache_breakpoint: EXPLICIT_BREAKPOINT } : part;
  switch (wire.role) {
    case "system":
    case "user":
      return {
        role: wire.role,
        content: (typeof wire.content === "string" ? [openAiChatText(wire.content)] : wire.content).map(mark),
      };
    case "tool":
      return {
        role: "tool",
        tool_call_id: wire.tool_call_id,
        content: (typeof wire.content === "string" ? [openAiChatText(wire.content)] : wire.content).map(mark),
      };
    case "assistant":
      return wire;
  }
}

function openAiChatTool(tool: ToolDefinition): OpenAiChatTool {
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
  };
}

function openAiChatMessages(message: ChatMessage): OpenAiChatMessage[] {
  switch (message.role) {
    case "system":
    case "user":
      return [{ role: message.role, content: openAiChatContent(message.content) }];
    case "assistant": {
      const texts = partsOfType(message.content, "text").map(openAiChatTextPart);
      const toolCalls = partsOfType(message.content, "tool_call").map(openAiChatToolCall);
      const content = texts.length === 0 ? null : texts.length === 1 ? (texts[0]?.text ?? "") : texts;
      return [{ role: "assistant", content, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) }];
    }
    case "tool":
      return partsOfType(message.content, "tool_result").map((part) => ({
        role: "tool",
        tool_call_id: part.callId,
        content: part.text,
      }));
  }
}

function openAiChatContent(parts: readonly ContentPart[]): string | OpenAiChatContentPart[] {
  const only = parts.length === 1 ? parts[0] : undefined;
  if (only?.type === "text") return only.text;
  return parts.flatMap((part): OpenAiChatContentPart[] => {
    if (part.type === "text") return [openAiChatTextPart(part)];
    if (part.type === "image") return [{ type: "image_url", image_url: { url: part.url } }];
    return [];
  });
}

function openAiChatTextPart(part: TextPart): OpenAiChatTextPart {
  return openAiChatText(part.text);
}

function openAiChatText(text: string): OpenAiChatTextPart {
  return { type: "text", text };
}

function openAiChatToolCall(part: ToolCallPart): OpenAiChatToolCall {
  // Arguments go out verbatim: they are the model's own bytes from the previous turn.
  return { id: part.callId, type: "function", function: { name: part.name, arguments: part.argumentsJson } };
}
