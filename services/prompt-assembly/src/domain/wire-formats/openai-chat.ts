// OpenAI Chat Completions. A message made of exactly one text part is sent as a plain string; any
// other mix is sent as an array of typed parts. An assistant turn with only tool calls has
// `content: null`; each tool result is its own `tool` message.

import { JsonFragment } from "../canonical-json";
import type { ChatMessage, ChatRequest, ContentPart, ToolDefinition } from "../model";
import { MessageMemo } from "./message-memo";
import {
  assertMessagesWellFormed,
  OPENAI_CACHE_RETENTIONS,
  openAiCacheFields,
  partsOfType,
  systemText,
  type TextPart,
  type ToolCallPart,
  type WireFormatPlugin,
} from "./wire-format";

export interface OpenAiChatTextPart {
  readonly type: "text";
  readonly text: string;
}
export interface OpenAiChatImagePart {
  readonly type: "image_url";
  readonly image_url: { readonly url: string };
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
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string };
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
  readonly prompt_cache_options?: { readonly comparison_response_id: string };
}

function chatBody<M>(
  request: ChatRequest,
  wireMessages: (message: ChatMessage, index: number) => readonly M[],
  tail: ChatMessage | undefined,
) {
  assertMessagesWellFormed(tail === undefined ? request.messages : [...request.messages, tail]);
  const system = systemText(request.system);
  const messages: (OpenAiChatMessage | M)[] = system.length > 0 ? [{ role: "system", content: system }] : [];
  request.messages.forEach((message, index) => {
    messages.push(...wireMessages(message, index));
  });
  if (tail !== undefined) messages.push(...openAiChatMessages(tail));
  return {
    model: request.model,
    messages,
    ...(request.tools.length > 0 ? { tools: request.tools.map(openAiChatTool) } : {}),
    ...(request.maxOutputTokens === undefined ? {} : { max_tokens: request.maxOutputTokens }),
    ...(request.promptCacheKey === undefined ? {} : { prompt_cache_key: request.promptCacheKey }),
    ...openAiCacheFields(request),
  };
}

const written = new MessageMemo((message, index) =>
  openAiChatMessages(message).map((wire) => JsonFragment.of(wire, `messages[${index}]`)),
);

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
  protoValue: 1,
  serialize: (request, _options, tail) => chatBody(request, openAiChatMessages, tail),
  jsonBody: (request, _options, tail) => chatBody(request, (message, index) => written.of(message, index), tail),
};

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
  return { type: "text", text: part.text };
}

function openAiChatToolCall(part: ToolCallPart): OpenAiChatToolCall {
  // Arguments go out verbatim: they are the model's own bytes from the previous turn.
  return { id: part.callId, type: "function", function: { name: part.name, arguments: part.argumentsJson } };
}
