// Turns the provider-neutral ChatRequest into a provider's request body (a plain object; the caller
// runs it through canonicalJson to get bytes). Every wire object is built field by field from the
// typed model: internal fields that ride along on message objects at runtime (messageId, seq,
// localDate, senderYmd ...) must never reach a provider, so nothing here spreads a model object.
//
// Shared rules, the same in every format:
// - System text is the non-empty section texts joined with SYSTEM_SECTION_SEPARATOR, in the
//   given order; Anthropic gets one system block per non-empty section instead.
// - Parts allowed per role: system → text; user → text, image; assistant → text, tool_call;
//   tool → tool_result. Anything else, and a message without parts, is a ValidationError, so a
//   malformed history fails loudly instead of being re-shaped differently by each format.
// - Tools are emitted in the given order, or sorted by name (UTF-16 code units) when
//   `canonicalToolOrder` is set, which guards against tool lists built from hash maps
//   (openai/codex#2611). Duplicate tool names are rejected: providers refuse them, and they would
//   make "sorted by name" depend on input order again.
// - OpenAI chat content: a message made of exactly one text part is sent as a plain string;
//   any other mix is sent as an array of typed parts. An assistant turn with only tool calls has
//   `content: null`.

import { ValidationError } from "@prefix-guard/errors";
import { canonicalJson, parseJsonStrict } from "./canonical-json";
import type { ChatMessage, ChatRequest, ContentPart, Role, SystemSection, ToolDefinition, WireFormat } from "./model";
import { estimateTokens } from "./tokens";

export interface SerializeOptions {
  /** Sort tools by name instead of keeping the caller's order. */
  readonly canonicalToolOrder: boolean;
  /**
   * Anthropic only: the smallest cumulative prefix, in estimated tokens, that may carry a cache
   * breakpoint; the model's published minimum (cacheMinimumTokensFor in cache-minimums.ts).
   * Omitted means 0: breakpoints are placed by position alone.
   */
  readonly cacheMinimumTokens?: number;
  /**
   * Anthropic only: the first part of the first message is the summary slot (attachSummary puts
   * it there), the head of the history that stays byte-stable until the next compaction.
   */
  readonly summaryHead?: boolean;
}

export const SYSTEM_SECTION_SEPARATOR = "\n\n";
/** Anthropic requires max_tokens; used when the request does not set maxOutputTokens. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;
/** Anthropic rejects requests with more cache_control markers than this. */
export const ANTHROPIC_MAX_CACHE_BREAKPOINTS = 4;

// ---------------------------------------------------------------------------------------------
// Wire shapes

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
}

export interface AnthropicCacheControl {
  readonly type: "ephemeral";
}
export type AnthropicImageSource =
  | { readonly type: "url"; readonly url: string }
  | { readonly type: "base64"; readonly media_type: string; readonly data: string };
export type AnthropicContentBlock =
  | { readonly type: "text"; readonly text: string; readonly cache_control?: AnthropicCacheControl }
  | { readonly type: "image"; readonly source: AnthropicImageSource; readonly cache_control?: AnthropicCacheControl }
  | {
      readonly type: "tool_use";
      readonly id: string;
      readonly name: string;
      readonly input: Readonly<Record<string, unknown>>;
      readonly cache_control?: AnthropicCacheControl;
    }
  | {
      readonly type: "tool_result";
      readonly tool_use_id: string;
      readonly content: string;
      readonly is_error?: true;
      readonly cache_control?: AnthropicCacheControl;
    };
export interface AnthropicMessage {
  readonly role: "user" | "assistant";
  readonly content: readonly AnthropicContentBlock[];
}
export interface AnthropicSystemBlock {
  readonly type: "text";
  readonly text: string;
  readonly cache_control?: AnthropicCacheControl;
}
export interface AnthropicTool {
  readonly name: string;
  readonly description: string;
  readonly input_schema: unknown;
  readonly cache_control?: AnthropicCacheControl;
}
export interface AnthropicMessagesBody {
  readonly model: string;
  readonly max_tokens: number;
  readonly system?: readonly AnthropicSystemBlock[];
  readonly tools?: readonly AnthropicTool[];
  readonly messages: readonly AnthropicMessage[];
}

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
}

// ---------------------------------------------------------------------------------------------
// Entry point and shared helpers

/** The request body for `format` as a plain object; canonicalize it to get the bytes to send. */
export function serializeRequest(request: ChatRequest, format: WireFormat, options: SerializeOptions): unknown {
  switch (format) {
    case "openai_chat":
      return serializeOpenAiChat(request, options);
    case "anthropic_messages":
      return serializeAnthropicMessages(request, options);
    case "openai_responses":
      return serializeOpenAiResponses(request, options);
    default: {
      const unknownFormat: never = format;
      throw new ValidationError("format", `unsupported wire format ${JSON.stringify(unknownFormat)}`);
    }
  }
}

/** The system prompt as one string: non-empty section texts joined in the given order. */
export function systemText(sections: readonly SystemSection[]): string {
  return sections
    .map((section) => section.text)
    .filter((text) => text.length > 0)
    .join(SYSTEM_SECTION_SEPARATOR);
}

/** Tools in wire order. Validates names and schemas first, so every format rejects the same input. */
export function orderTools(tools: readonly ToolDefinition[], options: SerializeOptions): readonly ToolDefinition[] {
  const seen = new Set<string>();
  tools.forEach((tool, index) => {
    if (typeof tool.name !== "string" || tool.name.length === 0) {
      throw new ValidationError(`tools[${index}].name`, "must be a non-empty string");
    }
    if (seen.has(tool.name)) {
      throw new ValidationError(`tools[${index}].name`, `duplicate tool name ${JSON.stringify(tool.name)}`);
    }
    seen.add(tool.name);
    if (!isPlainObject(tool.inputSchema)) {
      throw new ValidationError(`tools[${index}].inputSchema`, "must be a JSON object");
    }
  });
  return options.canonicalToolOrder ? [...tools].sort((a, b) => compareCodeUnits(a.name, b.name)) : tools;
}

/** Locale-independent string order (localeCompare would vary with the host's ICU data). */
export function compareCodeUnits(a: string, b: string): number {
  if (a < b) return -1;
  if (a > b) return 1;
  return 0;
}

const ALLOWED_PARTS: Readonly<Record<Role, readonly ContentPart["type"][]>> = {
  system: ["text"],
  user: ["text", "image"],
  assistant: ["text", "tool_call"],
  tool: ["tool_result"],
};

function assertMessagesWellFormed(messages: readonly ChatMessage[]): void {
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

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

type TextPart = Extract<ContentPart, { type: "text" }>;
type ImagePart = Extract<ContentPart, { type: "image" }>;
type ToolCallPart = Extract<ContentPart, { type: "tool_call" }>;
type ToolResultPart = Extract<ContentPart, { type: "tool_result" }>;

function partsOfType<T extends ContentPart["type"]>(
  parts: readonly ContentPart[],
  type: T,
): Extract<ContentPart, { type: T }>[] {
  return parts.filter((part): part is Extract<ContentPart, { type: T }> => part.type === type);
}

// ---------------------------------------------------------------------------------------------
// OpenAI Chat Completions

export function serializeOpenAiChat(request: ChatRequest, options: SerializeOptions): OpenAiChatBody {
  const tools = orderTools(request.tools, options);
  assertMessagesWellFormed(request.messages);
  const system = systemText(request.system);
  const messages: OpenAiChatMessage[] = system.length > 0 ? [{ role: "system", content: system }] : [];
  for (const message of request.messages) {
    messages.push(...openAiChatMessages(message));
  }
  return {
    model: request.model,
    messages,
    ...(tools.length > 0 ? { tools: tools.map(openAiChatTool) } : {}),
    ...(request.maxOutputTokens === undefined ? {} : { max_tokens: request.maxOutputTokens }),
    ...(request.promptCacheKey === undefined ? {} : { prompt_cache_key: request.promptCacheKey }),
  };
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
  return { type: "text", text: part.text };
}

function openAiChatToolCall(part: ToolCallPart): OpenAiChatToolCall {
  // Arguments go out verbatim: they are the model's own bytes from the previous turn.
  return { id: part.callId, type: "function", function: { name: part.name, arguments: part.argumentsJson } };
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages

export function serializeAnthropicMessages(request: ChatRequest, options: SerializeOptions): AnthropicMessagesBody {
  const tools = orderTools(request.tools, options);
  assertMessagesWellFormed(request.messages);
  const system = request.system
    .filter((section) => section.text.length > 0)
    .map((section): AnthropicSystemBlock => ({ type: "text", text: section.text }));
  const converted = request.messages.map((message, index) => anthropicMessage(message, `messages[${index}]`));
  const summaryBlock = options.summaryHead === true ? summaryHeadBlock(converted) : undefined;
  const messages = mergeConsecutiveRoles(converted);
  const minimumTokens = options.cacheMinimumTokens ?? 0;
  if (!Number.isSafeInteger(minimumTokens) || minimumTokens < 0) {
    throw new ValidationError("options.cacheMinimumTokens", `must be an integer >= 0, got ${String(minimumTokens)}`);
  }
  return placeAnthropicBreakpoints(
    {
      model: request.model,
      max_tokens: request.maxOutputTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
      ...(system.length > 0 ? { system } : {}),
      ...(tools.length > 0 ? { tools: tools.map(anthropicTool) } : {}),
      messages,
    },
    {
      minimumTokens,
      // Merging keeps block objects, so the summary block is found again by identity wherever
      // merging and tool-results-first put it.
      ...(summaryBlock === undefined ? {} : { summaryBlock: locateBlock(messages, summaryBlock) }),
    },
  );
}

function summaryHeadBlock(messages: readonly AnthropicMessage[]): AnthropicContentBlock {
  const first = messages[0];
  const block = first?.content[0];
  if (first?.role !== "user" || block?.type !== "text") {
    throw new ValidationError("options.summaryHead", "the first message must be a user message starting with text");
  }
  return block;
}

function locateBlock(messages: readonly AnthropicMessage[], wanted: AnthropicContentBlock): BlockPosition {
  for (const [message, { content }] of messages.entries()) {
    const block = content.indexOf(wanted);
    if (block >= 0) return { message, block };
  }
  throw new ValidationError("options.summaryHead", "summary block lost while merging turns");
}

const EPHEMERAL: AnthropicCacheControl = { type: "ephemeral" };

/** A content block in `body.messages`: message index, then block index within its content. */
export interface BlockPosition {
  readonly message: number;
  readonly block: number;
}

export interface BreakpointPlacement {
  /** No breakpoint on a block whose cumulative prefix is below this many estimated tokens. */
  readonly minimumTokens: number;
  /** The summary block at the head of the history, when there is one. */
  readonly summaryBlock?: BlockPosition;
}

/**
 * An image costs width×height/750 tokens at Anthropic, which cannot be known without decoding
 * it. 54 is a 200×200 image, smaller than almost anything sent, so an image can make the estimate
 * fall short (a breakpoint skipped) but hardly push it over a minimum the real prefix misses.
 */
export const IMAGE_BLOCK_ESTIMATED_TOKENS = 54;

/**
 * Puts `cache_control` markers on the body, replacing any it already has.
 *
 * A marker is a read/write point of Anthropic's cache: the prefix up to the marked block (tools,
 * then system, then messages) is written there and can be read by a later request whose prefix up
 * to that block is identical. A marker that lands on a different block every turn makes every
 * request write a prefix that no later request reads (microsoft/vscode#323642), so the rule is
 * built so that appending turns never moves a marker off the block it was on. The candidates, in
 * cache order:
 *
 *   1. end of tools — the last tool definition;
 *   2. end of system — the last system block;
 *   3. summary head — the summary block that starts the history after a compaction;
 *   4. newest turn — the last block of the final message.
 *
 * Each candidate is marked iff the cumulative estimated tokens (estimateTokens) from the first
 * tool through the end of that block reach `minimumTokens`: below the model's minimum Anthropic
 * caches nothing, and the slot would be wasted. Four candidates at most, so the limit of four can
 * never be exceeded.
 *
 * What "never moves" means: 1–3 are pinned to content. Their block and everything before it is
 * unchanged by an appended turn, so the same block stays marked (and its cumulative size, hence
 * the gate, is unchanged too) until that content itself changes: the tools, the system prompt,
 * the next compaction. Only 4 moves, and only forward, onto the new final block; the request
 * after this one finds the prefix this one wrote there through Anthropic's lookback from its own
 * newest-turn marker. Adding more rolling markers further back (the spare slot when there is no
 * summary) would make those move every turn, so the slot is left unused on purpose.
 *
 * Returns a new body; the input is left untouched.
 */
export function placeAnthropicBreakpoints(
  body: AnthropicMessagesBody,
  placement: BreakpointPlacement = { minimumTokens: 0 },
): AnthropicMessagesBody {
  const tools = (body.tools ?? []).map(withoutMarker);
  const system = (body.system ?? []).map(withoutMarker);
  const messages = body.messages.map((message) => ({
    role: message.role,
    content: message.content.map(withoutMarker),
  }));

  let cumulative = 0;
  const toolEnds = tools.map((tool) => (cumulative += toolTokens(tool)));
  const systemEnds = system.map((block) => (cumulative += estimateTokens(block.text)));
  const blockEnds = messages.map((message) => message.content.map((block) => (cumulative += blockTokens(block))));
  const worthCaching = (end: number | undefined): boolean => end !== undefined && end >= placement.minimumTokens;

  const markedBlocks = new Set<string>();
  const markBlock = (position: BlockPosition | undefined): void => {
    if (position !== undefined && worthCaching(blockEnds[position.message]?.[position.block])) {
      markedBlocks.add(`${position.message}:${position.block}`);
    }
  };
  markBlock(placement.summaryBlock);
  const finalMessage = messages.length - 1;
  const finalBlocks = messages[finalMessage]?.content.length ?? 0;
  if (finalBlocks > 0) markBlock({ message: finalMessage, block: finalBlocks - 1 });

  const placed: AnthropicMessagesBody = {
    model: body.model,
    max_tokens: body.max_tokens,
    ...(body.system === undefined ? {} : { system: markLastIf(system, worthCaching(systemEnds.at(-1))) }),
    ...(body.tools === undefined ? {} : { tools: markLastIf(tools, worthCaching(toolEnds.at(-1))) }),
    messages: messages.map((message, messageIndex) => ({
      role: message.role,
      content: message.content.map((block, blockIndex) =>
        markedBlocks.has(`${messageIndex}:${blockIndex}`) ? { ...block, cache_control: EPHEMERAL } : block,
      ),
    })),
  };
  const count = countCacheBreakpoints(placed);
  if (count > ANTHROPIC_MAX_CACHE_BREAKPOINTS) {
    throw new ValidationError(
      "body",
      `${count} cache breakpoints exceed the limit of ${ANTHROPIC_MAX_CACHE_BREAKPOINTS}`,
    );
  }
  return placed;
}

/** Number of cache_control markers anywhere in the body (system, tools, message blocks). */
export function countCacheBreakpoints(body: AnthropicMessagesBody): number {
  const marked = (item: { readonly cache_control?: AnthropicCacheControl }): number =>
    item.cache_control === undefined ? 0 : 1;
  let count = 0;
  for (const block of body.system ?? []) count += marked(block);
  for (const tool of body.tools ?? []) count += marked(tool);
  for (const message of body.messages) for (const block of message.content) count += marked(block);
  return count;
}

/** Estimated tokens of one tool definition as the provider renders it: its JSON. */
function toolTokens(tool: AnthropicTool): number {
  return estimateTokens(
    canonicalJson({ name: tool.name, description: tool.description, input_schema: tool.input_schema }, "tools"),
  );
}

function blockTokens(block: AnthropicContentBlock): number {
  switch (block.type) {
    case "text":
      return estimateTokens(block.text);
    case "image":
      return IMAGE_BLOCK_ESTIMATED_TOKENS;
    case "tool_use":
      return estimateTokens(block.name) + estimateTokens(canonicalJson(block.input, "tool_use.input"));
    case "tool_result":
      return estimateTokens(block.content);
  }
}

function withoutMarker<T extends { readonly cache_control?: AnthropicCacheControl }>(item: T): T {
  if (item.cache_control === undefined) return item;
  const { cache_control: _dropped, ...rest } = item;
  // Dropping an optional field leaves a valid T; TypeScript cannot see that through the generic.
  return rest as unknown as T;
}

function markLastIf<T extends { readonly cache_control?: AnthropicCacheControl }>(
  items: readonly T[],
  mark: boolean,
): T[] {
  return items.map((item, index) =>
    mark && index === items.length - 1 ? { ...item, cache_control: EPHEMERAL } : item,
  );
}

/**
 * Anthropic requires user and assistant turns to alternate, and tool results travel in user
 * turns, so consecutive same-role messages are joined into one. Inside a joined user turn the
 * tool_result blocks move to the front (stable), as the API requires them before any text.
 */
export function mergeConsecutiveRoles(messages: readonly AnthropicMessage[]): AnthropicMessage[] {
  const merged: AnthropicMessage[] = [];
  for (const message of messages) {
    const last = merged[merged.length - 1];
    if (last !== undefined && last.role === message.role) {
      merged[merged.length - 1] = { role: last.role, content: [...last.content, ...message.content] };
    } else {
      merged.push(message);
    }
  }
  return merged.map((message) =>
    message.role === "user" ? { role: "user", content: toolResultsFirst(message.content) } : message,
  );
}

function toolResultsFirst(blocks: readonly AnthropicContentBlock[]): AnthropicContentBlock[] {
  return [
    ...blocks.filter((block) => block.type === "tool_result"),
    ...blocks.filter((block) => block.type !== "tool_result"),
  ];
}

function anthropicTool(tool: ToolDefinition): AnthropicTool {
  return { name: tool.name, description: tool.description, input_schema: tool.inputSchema };
}

function anthropicMessage(message: ChatMessage, field: string): AnthropicMessage {
  if (message.role === "system") {
    throw new ValidationError(`${field}.role`, "Anthropic has no system role in messages; use request.system");
  }
  return {
    role: message.role === "assistant" ? "assistant" : "user",
    content: message.content.map((part, index) => anthropicBlock(part, `${field}.content[${index}]`)),
  };
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

/** tool_use.input must be an object; an empty arguments string (a call without arguments) means {}. */
function toolInputObject(argumentsJson: string, field: string): Record<string, unknown> {
  if (argumentsJson.trim().length === 0) return {};
  const parsed = parseJsonStrict(argumentsJson, field);
  if (!isPlainObject(parsed)) {
    throw new ValidationError(field, "tool call arguments must be a JSON object");
  }
  return parsed;
}

function anthropicImageSource(part: ImagePart, field: string): AnthropicImageSource {
  if (!part.url.startsWith("data:")) return { type: "url", url: part.url };
  // data:[<media type>][;param]*;base64,<data>
  const comma = part.url.indexOf(",");
  if (comma < 0) throw new ValidationError(field, "data URL without a comma");
  const [declaredType = "", ...params] = part.url.slice("data:".length, comma).split(";");
  if (!params.includes("base64")) {
    throw new ValidationError(field, "only base64 data URLs can be sent to Anthropic");
  }
  const mediaType = declaredType.length > 0 ? declaredType : part.mediaType;
  return { type: "base64", media_type: mediaType, data: part.url.slice(comma + 1) };
}

// ---------------------------------------------------------------------------------------------
// OpenAI Responses

export function serializeOpenAiResponses(request: ChatRequest, options: SerializeOptions): OpenAiResponsesBody {
  const tools = orderTools(request.tools, options);
  assertMessagesWellFormed(request.messages);
  const instructions = systemText(request.system);
  return {
    model: request.model,
    ...(instructions.length > 0 ? { instructions } : {}),
    input: request.messages.flatMap(responsesItems),
    ...(tools.length > 0 ? { tools: tools.map(responsesTool) } : {}),
    ...(request.maxOutputTokens === undefined ? {} : { max_output_tokens: request.maxOutputTokens }),
    ...(request.promptCacheKey === undefined ? {} : { prompt_cache_key: request.promptCacheKey }),
  };
}

function responsesTool(tool: ToolDefinition): OpenAiResponsesTool {
  return { type: "function", name: tool.name, description: tool.description, parameters: tool.inputSchema };
}

/**
 * One message item per run of consecutive text/image parts; each tool call and tool result is
 * its own item, in part order.
 */
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
