// OpenAI Responses: the system text becomes `instructions` (for gpt-5.6 and later a leading
// developer message, see responsesBody); each run of consecutive text/image parts is one message
// item, and each tool call and tool result is its own item, in part order. For gpt-5.6 and later,
// explicit cache breakpoints are placed by openai-breakpoints.ts.

import { canonicalJson, JsonFragment } from "@prefix-guard/canonical-json";
import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import type { ChatMessage, ChatRequest, ToolDefinition } from "../model";
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
  type SerializeOptions,
  systemText,
  type WireFormatPlugin,
} from "./wire-format";

export type OpenAiResponsesInputText = {
  readonly type: "input_text";
  readonly text: string;
  /** gpt-5.6+: the end of a prefix to cache (openai-breakpoints.ts). */
  readonly prompt_cache_breakpoint?: OpenAiPromptCacheBreakpoint;
};
export type OpenAiResponsesContent =
  | OpenAiResponsesInputText
  | { readonly type: "output_text"; readonly text: string }
  | {
      readonly type: "input_image";
      readonly image_url: string;
      readonly detail: "auto";
      readonly prompt_cache_breakpoint?: OpenAiPromptCacheBreakpoint;
    };
export type OpenAiResponsesItem =
  | {
      readonly type: "message";
      readonly role: "developer" | "system" | "user" | "assistant";
      readonly content: readonly OpenAiResponsesContent[];
    }
  | { readonly type: "function_call"; readonly call_id: string; readonly name: string; readonly arguments: string }
  | {
      readonly type: "function_call_output";
      readonly call_id: string;
      /** An array only to carry a breakpoint. */
      readonly output: string | readonly OpenAiResponsesInputText[];
    };
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
  readonly prompt_cache_options?: OpenAiPromptCacheOptions;
}

/** An item of a stored message, and how the body writes it when it carries no breakpoint. */
interface WireItem<Written> {
  readonly wire: OpenAiResponsesItem;
  readonly written: Written;
}

function responsesBody<Written>(
  request: ChatRequest,
  options: SerializeOptions,
  items: (message: ChatMessage, index: number) => readonly WireItem<Written>[],
  tail: ChatMessage | undefined,
) {
  assertMessagesWellFormed(tail === undefined ? request.messages : [...request.messages, tail]);
  const system = systemText(request.system);
  const tools = request.tools.map(responsesTool);
  const perMessage = request.messages.map(items);
  const api = request.providerCache?.promptCacheOptions;
  const chosen =
    api === undefined
      ? NO_BREAKPOINTS
      : chooseOpenAiBreakpoints(
          {
            tools: tools.map((tool) => estimateTokens(canonicalJson(tool, "tools"))),
            systemTokens: system.length > 0 ? estimateTokens(system) : null,
            messages: perMessage.map((units) => units.map((unit) => responsesCacheParts(unit.wire))),
            summaryHead: options.summaryHead === true,
          },
          api,
          options.cacheMinimumTokens ?? 0,
        );
  // gpt-5.6+ (api set): the system text is the first input item, a developer message, because the
  // `instructions` string cannot carry a breakpoint and the end of the system text is the stable
  // prefix's; OpenAI's guide puts a cached playbook there too, and implicit mode also looks up the
  // end of the leading developer messages. The same text reaches the model either way.
  const input: (OpenAiResponsesItem | Written)[] = [];
  if (api !== undefined && system.length > 0) {
    const developer: OpenAiResponsesItem = {
      type: "message",
      role: "developer",
      content: [{ type: "input_text", text: system }],
    };
    input.push(chosen.systemEnd ? withBreakpoints(developer, new Set([0])) : developer);
  }
  const marked = markedPartsByUnit(chosen);
  perMessage.flat().forEach(({ wire, written }, unit) => {
    const parts = marked.get(unit);
    input.push(parts === undefined ? written : withBreakpoints(wire, parts));
  });
  if (tail !== undefined) input.push(...responsesItems(tail));
  return {
    model: request.model,
    ...(api === undefined && system.length > 0 ? { instructions: system } : {}),
    input,
    ...(tools.length > 0 ? { tools } : {}),
    ...(request.maxOutputTokens === undefined ? {} : { max_output_tokens: request.maxOutputTokens }),
    ...(request.promptCacheKey === undefined ? {} : { prompt_cache_key: request.promptCacheKey }),
    ...openAiCacheFields(request),
  };
}

const written = new MessageMemo((message, index) =>
  responsesItems(message).map(
    (wire): WireItem<JsonFragment> => ({ wire, written: JsonFragment.of(wire, `messages[${index}]`) }),
  ),
);

const plain = (message: ChatMessage): WireItem<OpenAiResponsesItem>[] =>
  responsesItems(message).map((wire) => ({ wire, written: wire }));

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
  cacheModes: OPENAI_CACHE_MODES,
  protoValue: 3,
  serialize: (request, options, tail) => responsesBody(request, options, plain, tail),
  jsonBody: (request, options, tail) =>
    responsesBody(request, options, (message, index) => written.of(message, index), tail),
};

/** The parts of an item as placement sees them: input content and tool output take a breakpoint. */
function responsesCacheParts(item: OpenAiResponsesItem): CachePart[] {
  switch (item.type) {
    case "message":
      if (item.role === "assistant") {
        const tokens = item.content.reduce((sum, part) => sum + ("text" in part ? estimateTokens(part.text) : 0), 0);
        return [{ tokens, markable: false }];
      }
      return item.content.map((part) => ({
        tokens: part.type === "input_image" ? IMAGE_BLOCK_ESTIMATED_TOKENS : estimateTokens(part.text),
        markable: part.type !== "output_text",
      }));
    case "function_call":
      return [{ tokens: estimateTokens(item.name) + estimateTokens(item.arguments), markable: false }];
    case "function_call_output":
      return [
        {
          tokens:
            typeof item.output === "string"
              ? estimateTokens(item.output)
              : item.output.reduce((sum, part) => sum + estimateTokens(part.text), 0),
          markable: true,
        },
      ];
  }
}

/** The item with a breakpoint on each of `parts`; a tool output string becomes one input_text part to carry it. */
function withBreakpoints(item: OpenAiResponsesItem, parts: ReadonlySet<number>): OpenAiResponsesItem {
  switch (item.type) {
    case "message":
      return {
        type: "message",
        role: item.role,
        content: item.content.map((part, index) =>
          parts.has(index) && part.type !== "output_text"
            ? { ...part, prompt_cache_breakpoint: EXPLICIT_BREAKPOINT }
            : part,
        ),
      };
    case "function_call_output": {
      const output: readonly OpenAiResponsesInputText[] =
        typeof item.output === "string" ? [{ type: "input_text", text: item.output }] : item.output;
      return {
        type: "function_call_output",
        call_id: item.call_id,
        output: output.map((part, index) =>
          parts.has(index) ? { ...part, prompt_cache_breakpoint: EXPLICIT_BREAKPOINT } : part,
        ),
      };
    }
    case "function_call":
      return item;
  }
}

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
