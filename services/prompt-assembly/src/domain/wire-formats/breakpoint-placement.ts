// Which cache breakpoints a body carries, on sizes alone: the rule every format with explicit
// breakpoints shares (Anthropic cache_control, Bedrock cachePoint, OpenAI gpt-5.6+
// prompt_cache_breakpoint). The formats differ in where a breakpoint may sit and how it is written;
// they hand this module the estimated tokens of each cacheable element in cache order (tools, then
// system, then message blocks) and the candidates, and write what it chooses.
//
// The candidates, in cache order:
//
//   1. end of tools: the last tool definition (formats whose tools can carry one);
//   2. end of system: the last system block;
//   3. summary head: the block that starts the history after a compaction;
//   4. the rolling blocks: the newest turn's block, and for OpenAI's explicit mode the one the
//      previous request marked as its newest (openai-breakpoints.ts says why).
//
// 1–3 are pinned to content: appending turns leaves them on the block they were on. Each candidate
// is marked iff the cumulative estimated tokens from the first tool through the end of its block
// reach `minimumTokens` (below the model's minimum the provider caches nothing and the slot would
// be wasted). When there are more candidates than `maxBreakpoints`, they are kept in this order:
// the newest turn (what the next request reads), end of system (survives compactions and edits to
// the history), summary head, end of tools, then the older rolling blocks. With the four slots every
// provider in the catalogue allows, nothing is ever dropped; only a catalogue with fewer drops any.

import { ValidationError } from "@prefix-guard/errors";

/**
 * An image costs width×height/750 tokens at Anthropic, which cannot be known without decoding
 * it. 54 is a 200×200 image, smaller than almost anything sent, so an image can make the estimate
 * fall short (a breakpoint skipped) but hardly push it over a minimum the real prefix misses.
 */
export const IMAGE_BLOCK_ESTIMATED_TOKENS = 54;

/** A content block in the history: message index, then block index within its content. */
export interface BlockPosition {
  readonly message: number;
  readonly block: number;
}

export interface BreakpointPlacement {
  /** No breakpoint on a block whose cumulative prefix is below this many estimated tokens. */
  readonly minimumTokens: number;
  /** The summary block at the head of the history, when there is one. */
  readonly summaryBlock?: BlockPosition;
  /**
   * The blocks marked while they are at the moving end of the history, newest first. Omitted: the
   * last block of the final message. `[]`: none (the provider places that one itself: Anthropic's
   * automatic caching, OpenAI's implicit breakpoint).
   */
  readonly rollingBlocks?: readonly BlockPosition[];
  /** Whether the last tool may carry a breakpoint; default true (OpenAI's tools cannot). */
  readonly markToolsEnd?: boolean;
}

/** Estimated tokens of the cacheable elements, in cache order. */
export interface CacheElementTokens {
  readonly tools: readonly number[];
  readonly system: readonly number[];
  /** Per message, per block. */
  readonly blocks: readonly (readonly number[])[];
}

export interface ChosenBreakpoints {
  readonly toolsEnd: boolean;
  readonly systemEnd: boolean;
  /** Marked message blocks as "message:block". */
  readonly blocks: ReadonlySet<string>;
}

export const NO_BREAKPOINTS: ChosenBreakpoints = { toolsEnd: false, systemEnd: false, blocks: new Set() };

export const blockKey = (position: BlockPosition): string => `${position.message}:${position.block}`;

/** The last block of the final message, if the history has one. */
export function finalBlockOf(blocks: CacheElementTokens["blocks"]): BlockPosition | undefined {
  const message = blocks.length - 1;
  const count = blocks[message]?.length ?? 0;
  return count > 0 ? { message, block: count - 1 } : undefined;
}

/** The rule above. @throws ValidationError unless `maxBreakpoints` is an integer >= 0. */
export function chooseCacheBreakpoints(
  tokens: CacheElementTokens,
  placement: BreakpointPlacement,
  maxBreakpoints: number,
): ChosenBreakpoints {
  if (!Number.isSafeInteger(maxBreakpoints) || maxBreakpoints < 0) {
    throw new ValidationError("maxBreakpoints", `must be an integer >= 0, got ${String(maxBreakpoints)}`);
  }
  let cumulative = 0;
  let toolsEnd: number | undefined;
  for (const size of tokens.tools) toolsEnd = cumulative += size;
  let systemEnd: number | undefined;
  for (const size of tokens.system) systemEnd = cumulative += size;
  const blockEnds = tokens.blocks.map((message) => message.map((size) => (cumulative += size)));
  const worthCaching = (end: number | undefined): boolean => end !== undefined && end >= placement.minimumTokens;
  const blockWorthCaching = (position: BlockPosition | undefined): position is BlockPosition =>
    position !== undefined && worthCaching(blockEnds[position.message]?.[position.block]);

  const finalBlock = finalBlockOf(tokens.blocks);
  const [newest, ...older] = placement.rollingBlocks ?? (finalBlock === undefined ? [] : [finalBlock]);
  type Candidate = "tools" | "system" | BlockPosition;
  const byPriority: (Candidate | undefined)[] = [
    newest,
    "system",
    placement.summaryBlock,
    placement.markToolsEnd === false ? undefined : "tools",
    ...older,
  ];
  const chosen: Candidate[] = [];
  const blocks = new Set<string>();
  for (const candidate of byPriority) {
    if (chosen.length === maxBreakpoints) break;
    const worth =
      candidate === "tools"
        ? worthCaching(toolsEnd)
        : candidate === "system"
          ? worthCaching(systemEnd)
          : blockWorthCaching(candidate) && !blocks.has(blockKey(candidate));
    if (candidate === undefined || !worth) continue;
    chosen.push(candidate);
    if (typeof candidate === "object") blocks.add(blockKey(candidate));
  }
  return { toolsEnd: chosen.includes("tools"), systemEnd: chosen.includes("system"), blocks };
}

/** @throws ValidationError unless `minimumTokens` is an integer >= 0. */
export function requireMinimumTokens(minimumTokens: number): number {
  if (!Number.isSafeInteger(minimumTokens) || minimumTokens < 0) {
    throw new ValidationError("options.cacheMinimumTokens", `must be an integer >= 0, got ${String(minimumTokens)}`);
  }
  return minimumTokens;
}
