// OpenAI Responses: the system text becomes `instructions`; each run of consecutive text/image
// parts is one message item, and each tool call and tool result is its own item, in part order.

import { JsonFragment } from "../canonical-json";
import type { ChatMessage, ChatRequest, ToolDefinition } from "../model";
import { MessageMemo } from "./message-memo";
import {
  assertMessagesWellFormed,
  OPENAI_CACHE_RETENTIONS,
  openAiCacheFields,
  systemText,
  type WireFormatPlugin,
} from "./wire-format";

export type OpenAiResponsesContent =
  | { readonly type: "input_text"; readonly text: string }
  | { readonly type: "output_text"; readonly text: string }
  | { readonly type: "input_image"; readonly image_url: string; readonly detail: "auto" };
export type OpenAiResponsesItem =
  | {
      readonly type: "message";
      readonly role: "system" | "user" | "assistant";
      readonly content: readonly OpenAiResponsesContent[];
    }
  | { readonly type: "function_call"; readonly call_id: string; readonly name: string; readonly arguments: string }
  | { readonly type: "function_call_output"; readonly call_id: string; readonly output: string };
export interface OpenAiResponsesTool {
  readonly type: "function";
  readonly name: string;
  readonly description: string;
  readonly parameters: unknown;
}
export interface OpenAiResponsesBody {
  readonly model: string;
  readonly instructions?: string;
  readonly input: readonly OpenAiResponsesItem[];
  readonly tools?: readonly OpenAiResponsesTool[];
  readonly max_output_tokens?: number;
  readonly prompt_cache_key?: string;
  readonly prompt_cache_retention?: string;
  readonly prompt_cache_options?: { readonly comparison_response_id: string };
}

function responsesBody<I>(
  request: ChatRequest,
  items: (message: ChatMessage, index: number) => readonly I[],
  tail: ChatMessage | undefined,
) {
  assertMessagesWellFormed(tail === undefined ? request.messages : [...request.messages, tail]);
  const instructions = systemText(request.system);
  const input: (I | OpenAiResponsesItem)[] = request.messages.flatMap(items);
  if (tail !== undefined) input.push(...responsesItems(tail));
  return {
    model: request.model,
    ...(instructions.length > 0 ? { instructions } : {}),
    input,
    ...(request.tools.length > 0 ? { tools: request.tools.map(responsesTool) } : {}),
    ...(request.maxOutputTokens === undefined ? {} : { max_output_tokens: request.maxOutputTokens }),
    ...(request.promptCacheKey === undefined ? {} : { prompt_cache_key: request.promptCacheKey }),
    ...openAiCacheFields(request),
  };
}

const written = new MessageMemo((message, index) =>
  responsesItems(message).map((item) => JsonFragment.of(item, `messages[${index}]`)),
);

export const openAiResponses: WireFormatPlugin<OpenAiResponsesBody> = {
  id: "openai_responses",
  usage: {
    provider: "openai_responses",
    promptTokens: "usage.input_tokens",
    cachedTokens: "usage.input_tokens_details.cached_tokens",
    cacheWriteTokens: "usage.cache_write_tokens",
    outputTokens: "usage.output_tokens",
  },
  cacheRetentions: OPENAI_CACHE_RETENTIONS,
  protoValue: 3,
  serialize: (request, _options, tail) => responsesBody(request, (message) => responsesItems(message), tail),
  jsonBody: (request, _options, tail) => responsesBody(request, (message, index) => written.of(message, index), tail),
};

function responsesTool(tool: ToolDefinition): OpenAiResponsesTool {
  return { type: "function", name: tool.name, description: tool.description, parameters: tool.inputSchema };
}

function responsesItems(message: ChatMessage): OpenAiResponsesItem[] {
  const role = message.role;
  const items: OpenAiResponsesItem[] = [];
  let run: OpenAiResponsesContent[] = [];
  const flushRun = (): void => {
    if (run.length > 0 && role !== "tool") items.push({ type: "message", role, content: run });
    run = [];
  };
  for (const part of message.content) {
    switch (part.type) {
      case "text":
        run.push({ type: role === "assistant" ? "output_text" : "input_text", text: part.text });
        break;
      case "image":
        run.push({ type: "input_image", image_url: part.url, detail: "auto" });
        break;
      case "tool_call":
        flushRun();
        items.push({ type: "function_call", call_id: part.callId, name: part.name, arguments: part.argumentsJson });
        break;
      case "tool_result":
        flushRun();
        items.push({ type: "function_call_output", call_id: part.callId, output: part.text });
        break;
    }
  }
  flushRun();
  return items;
}
