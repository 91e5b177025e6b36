// Where Anthropic's cache_control markers go.
//
// A marker is a read/write point of Anthropic's cache: the prefix up to the marked block (tools,
// then system, then messages) is written there and can be read by a later request whose prefix up
// to that block is identical. A marker that lands on a different block every turn makes every
// request write a prefix that no later request reads (microsoft/vscode#323642), so the rule is
// built so that appending turns never moves a marker off the block it was on. The candidates, in
// cache order:
//
//   1. end of tools — the last tool definition;
//   2. end of system — the last system block;
//   3. summary head — the summary block that starts the history after a compaction;
//   4. newest turn — the last block of the final message.
//
// Each candidate is marked iff the cumulative estimated tokens (estimateTokens) from the first
// tool through the end of that block reach `minimumTokens`: below the model's minimum Anthropic
// caches nothing, and the slot would be wasted. Four candidates at most, so the limit of four can
// never be exceeded.
//
// What "never moves" means: 1–3 are pinned to content. Their block and everything before it is
// unchanged by an appended turn, so the same block stays marked (and its cumulative size, hence
// the gate, is unchanged too) until that content itself changes: the tools, the system prompt,
// the next compaction. Only 4 moves, and only forward, onto the new final block; the request
// after this one finds the prefix this one wrote there through Anthropic's lookback from its own
// newest-turn marker. Adding more rolling markers further back (the spare slot when there is no
// summary) would make those move every turn, so the slot is left unused on purpose.
//
// Automatic caching (BuildRequest `cache.mode` "automatic"): the body carries a top-level
// `cache_control` and Anthropic puts that breakpoint on the last cacheable block itself, moving it
// forward as the history grows: it is candidate 4, so 4 is not placed here (a marker of our own on
// the same block would be a no-op at best, and uses one of the four slots the automatic one counts
// in). 1–3 stay, at most three, so the total with the automatic one is still four at most.

import { canonicalJson } from "@prefix-guard/canonical-json";
import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import type {
  AnthropicCacheControl,
  AnthropicContentBlock,
  AnthropicMessage,
  AnthropicMessagesBody,
  AnthropicTool,
} from "./anthropic-body";
import {
  type BreakpointPlacement,
  type CacheElementTokens,
  type ChosenBreakpoints,
  chooseCacheBreakpoints,
  IMAGE_BLOCK_ESTIMATED_TOKENS,
} from "./breakpoint-placement";

// The placement rule itself is shared with the other formats that mark breakpoints (OpenAI
// gpt-5.6+): breakpoint-placement.ts. Its names stay importable from here.
export {
  type BlockPosition,
  type BreakpointPlacement,
  type CacheElementTokens,
  type ChosenBreakpoints,
  IMAGE_BLOCK_ESTIMATED_TOKENS,
  requireMinimumTokens,
} from "./breakpoint-placement";

/** Anthropic rejects requests with more cache_control markers than this (the automatic one included). */
export const ANTHROPIC_MAX_CACHE_BREAKPOINTS = 4;

export const EPHEMERAL: AnthropicCacheControl = { type: "ephemeral" };

/** Estimated tokens of one tool definition as the provider renders it: its JSON. */
export function toolTokens(tool: AnthropicTool): number {
  return estimateTokens(
    canonicalJson({ name: tool.name, description: tool.description, input_schema: tool.input_schema }, "tools"),
  );
}

export function blockTokens(block: AnthropicContentBlock): number {
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

/** The rule above, on sizes alone: at most `maxBreakpoints` markers (four, or three beside an automatic one). */
export function chooseBreakpoints(
  tokens: CacheElementTokens,
  placement: BreakpointPlacement,
  maxBreakpoints: number = ANTHROPIC_MAX_CACHE_BREAKPOINTS,
): ChosenBreakpoints {
  return chooseCacheBreakpoints(tokens, placement, maxBreakpoints);
}

/**
 * Puts `cache_control` markers on a body by the rule above, replacing any it already has.
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
  const chosen = chooseBreakpoints(
    {
      tools: tools.map(toolTokens),
      system: system.map((block) => estimateTokens(block.text)),
      blocks: messages.map((message) => message.content.map(blockTokens)),
    },
    placement,
  );
  return {
    model: body.model,
    max_tokens: body.max_tokens,
    ...(body.system === undefined ? {} : { system: markLastIf(system, chosen.systemEnd) }),
    ...(body.tools === undefined ? {} : { tools: markLastIf(tools, chosen.toolsEnd) }),
    messages: messages.map(
      (message, messageIndex): AnthropicMessage => ({
        role: message.role,
        content: message.content.map((block, blockIndex) =>
          chosen.blocks.has(`${messageIndex}:${blockIndex}`) ? { ...block, cache_control: EPHEMERAL } : block,
        ),
      }),
    ),
  };
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

function withoutMarker<T extends { readonly cache_control?: AnthropicCacheControl }>(item: T): T {
  if (item.cache_control === undefined) return item;
  const { cache_control: _dropped, ...rest } = item;
  // Dropping an optional field leaves a valid T; TypeScript cannot see that through the generic.
  return rest as unknown as T;
}

export function markLastIf<T extends { readonly cache_control?: AnthropicCacheControl }>(
  items: readonly T[],
  mark: boolean,
  marker: AnthropicCacheControl = EPHEMERAL,
): T[] {
  return items.map((item, index) => (mark && index === items.length - 1 ? { ...item, cache_control: marker } : item));
}

/** The breakpoint marker: plain ephemeral (the provider's 5-minute default), or with the retention asked for. */
export function cacheControlFor(retention: "5m" | "1h" | undefined): AnthropicCacheControl {
  return retention === undefined ? EPHEMERAL : { type: "ephemeral", ttl: retention };
}
