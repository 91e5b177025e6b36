// The history of the block formats (Anthropic Messages, Bedrock Converse): user and assistant turns
// that alternate, each a list of content blocks, with cache markers placed by the rule in
// anthropic-breakpoints.ts. Each format converts a message to blocks its own way; merging, the
// summary head, the marker choice and the written form of a turn are the same for both.

import { JsonFragment, parseJsonStrict } from "@prefix-guard/canonical-json";
import { ValidationError } from "@prefix-guard/errors";
import type { ContentPart, Role } from "../model";
import {
  ANTHROPIC_MAX_CACHE_BREAKPOINTS,
  type BlockPosition,
  type ChosenBreakpoints,
  chooseBreakpoints,
} from "./anthropic-breakpoints";
import { isPlainObject } from "./wire-format";

export type TurnRole = "user" | "assistant";

/** A block with what placement and writing need of it, computed once per stored message. */
export interface TurnBlock<Wire> {
  /** The neutral part it was made from: tool results lead their turn, the summary head is text. */
  readonly kind: ContentPart["type"];
  readonly wire: Wire;
  readonly tokens: number;
  readonly json: JsonFragment;
}

export interface Turn<Block> {
  readonly role: TurnRole;
  readonly blocks: readonly Block[];
}

/** Tool results travel in user turns; system messages are each format's own error. */
export function turnRoleOf(role: Exclude<Role, "system">): TurnRole {
  return role === "assistant" ? "assistant" : "user";
}

/**
 * User and assistant turns must alternate and tool results travel in user turns, so consecutive
 * same-role messages are joined into one. Inside a joined user turn the tool results move to the
 * front (stable), as both APIs require them before any text.
 */
export function mergeTurns<Block extends { readonly kind: ContentPart["type"] }>(
  turns: readonly Turn<Block>[],
): Turn<Block>[] {
  const merged: Turn<Block>[] = [];
  for (const turn of turns) {
    const last = merged[merged.length - 1];
    if (last !== undefined && last.role === turn.role) {
      merged[merged.length - 1] = { role: last.role, blocks: [...last.blocks, ...turn.blocks] };
    } else {
      merged.push(turn);
    }
  }
  return merged.map((turn) => {
    if (turn.role !== "user") return turn;
    const blocks = [
      ...turn.blocks.filter((block) => block.kind === "tool_result"),
      ...turn.blocks.filter((block) => block.kind !== "tool_result"),
    ];
    // Unchanged turns stay the same object, so what was written for them can be reused.
    return blocks.every((block, index) => block === turn.blocks[index]) ? turn : { role: "user", blocks };
  });
}

/** The summary slot: the first block of the first message, which must be user text. */
export function summaryHeadBlock<Block extends { readonly kind: ContentPart["type"] }>(
  turns: readonly Turn<Block>[],
): Block {
  const first = turns[0];
  const block = first?.blocks[0];
  if (first?.role !== "user" || block?.kind !== "text") {
    throw new ValidationError("options.summaryHead", "the first message must be a user message starting with text");
  }
  return block;
}

export function locateBlock<Block>(turns: readonly Turn<Block>[], wanted: Block): BlockPosition {
  for (const [message, { blocks }] of turns.entries()) {
    const block = blocks.indexOf(wanted);
    if (block >= 0) return { message, block };
  }
  throw new ValidationError("options.summaryHead", "summary block lost while merging turns");
}

/**
 * The markers for merged turns (anthropic-breakpoints.ts), from the estimated tokens of the tools
 * and system blocks as the format writes them and of each turn's blocks.
 */
export function chooseTurnBreakpoints<Block extends { readonly tokens: number }>(input: {
  readonly tools: readonly number[];
  readonly system: readonly number[];
  readonly turns: readonly Turn<Block>[];
  readonly summaryBlock: Block | undefined;
  readonly minimumTokens: number;
  /** The provider marks the newest turn itself (Anthropic's automatic caching): no marker there, one slot fewer. */
  readonly automaticNewestTurn?: boolean;
}): ChosenBreakpoints {
  const { summaryBlock } = input;
  return chooseBreakpoints(
    {
      tools: input.tools,
      system: input.system,
      blocks: input.turns.map((turn) => turn.blocks.map((block) => block.tokens)),
    },
    {
      minimumTokens: input.minimumTokens,
      ...(summaryBlock === undefined ? {} : { summaryBlock: locateBlock(input.turns, summaryBlock) }),
      ...(input.automaticNewestTurn === true ? { rollingBlocks: [] } : {}),
    },
    input.automaticNewestTurn === true ? ANTHROPIC_MAX_CACHE_BREAKPOINTS - 1 : ANTHROPIC_MAX_CACHE_BREAKPOINTS,
  );
}

/** A whole turn as written, for turns that are one stored message, unmerged and without a marker. */
const writtenTurns = new WeakMap<object, JsonFragment>();

export function turnFragment<Block extends { readonly json: JsonFragment }>(turn: Turn<Block>): JsonFragment {
  let fragment = writtenTurns.get(turn);
  if (fragment === undefined) {
    fragment = JsonFragment.of({ role: turn.role, content: turn.blocks.map((block) => block.json) });
    writtenTurns.set(turn, fragment);
  }
  return fragment;
}

/** A tool call's input as both APIs take it: a JSON object; an empty arguments string (no arguments) is {}. */
export function toolInputObject(argumentsJson: string, field: string): Record<string, unknown> {
  if (argumentsJson.trim().length === 0) return {};
  const parsed = parseJsonStrict(argumentsJson, field);
  if (!isPlainObject(parsed)) {
    throw new ValidationError(field, "tool call arguments must be a JSON object");
  }
  return parsed;
}

/** What a `data:` URL holds: its declared media type ("" when it declares none) and its base64 data. */
export interface Base64Data {
  readonly mediaType: string;
  readonly data: string;
}

/**
 * `data:[<media type>][;param]*;base64,<data>`, split without decoding.
 * @throws ValidationError naming `field` for a data URL without a comma or not in base64.
 */
export function base64DataUrl(url: string, field: string, provider: string): Base64Data {
  const comma = url.indexOf(",");
  if (comma < 0) throw new ValidationError(field, "data URL without a comma");
  const [declaredType = "", ...params] = url.slice("data:".length, comma).split(";");
  if (!params.includes("base64")) {
    throw new ValidationError(field, `only base64 data URLs can be sent to ${provider}`);
  }
  return { mediaType: declaredType, data: url.slice(comma + 1) };
}
