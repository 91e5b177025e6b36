// Where OpenAI's explicit cache breakpoints go, for models whose family takes `prompt_cache_options`
// (gpt-5.6 and later): `"prompt_cache_breakpoint": {"mode": "explicit"}` on a content part. Older
// models get none, and their bodies are what they were.
//
// What OpenAI does with them (prompt-caching guide, Responses reference): a cached prefix is matched
// exactly at a breakpoint, never between two. A request writes at most four (the latest ones). In
// implicit mode (the default) OpenAI adds one breakpoint of its own at the end of the newest
// eligible message and writes up to the latest three explicit ones; a lookup considers the explicit
// breakpoints, the implicit one and up to 20 earlier eligible message endings. In explicit mode
// there is no implicit breakpoint: up to four explicit ones are written, and a lookup considers only
// the explicit breakpoints the request carries.
//
// A breakpoint may sit on a user, system/developer or tool-output content part (Chat Completions
// `text`/`image_url` parts, Responses `input_text`/`input_image` and `function_call_output`), never
// on assistant output, never on a tool definition and never on the Responses `instructions` string:
// the formats turn a marked string into an array of one part, and Responses bodies carry the system
// text as a leading developer message instead of `instructions` so its end can be marked.
//
// The candidates (breakpoint-placement.ts, the rule Anthropic's markers follow):
//
//   1. end of system — the system text, after the tools: the stable prefix;
//   2. summary head — the first part of the first message after a compaction;
//   3. explicit mode only: the newest message's last eligible part, and the same part of the
//      eligible message before it.
//
// 1 and 2 are pinned to content, as for Anthropic, and each only where the cumulative estimate
// reaches the family's minimumCacheableTokens. In implicit mode the newest-message breakpoint is not
// placed: OpenAI puts its implicit one on that same message ending, so ours would only spend one of
// the three explicit writes on a prefix written anyway, and the request after this one finds it
// among the earlier message endings. In explicit mode nothing but the request's own breakpoints is
// looked up, so the newest message must be marked for the next request to have something to read,
// and the part the previous request marked as its newest must be marked again for this one to read
// it: an agent loop appends one eligible message per request (the user turn or the tool outputs),
// so that is the eligible message before the newest. It is the one marker that leaves its block
// again, one request later; OpenAI has no lookback that would find the block unmarked.
// Limits: explicit ones ≤ maxBreakpoints − 1 in implicit mode (the implicit one counts), ≤
// maxBreakpoints in explicit mode; with four there is room for all candidates.

import { ValidationError } from "@prefix-guard/errors";
import type { PromptCacheOptionsApi } from "../provider-cache";
import {
  type BlockPosition,
  type ChosenBreakpoints,
  chooseCacheBreakpoints,
  requireMinimumTokens,
} from "./breakpoint-placement";

export interface OpenAiPromptCacheBreakpoint {
  readonly mode: "explicit";
}

export const EXPLICIT_BREAKPOINT: OpenAiPromptCacheBreakpoint = { mode: "explicit" };

/** One content part of a wire message or item, as placement sees it. */
export interface CachePart {
  readonly tokens: number;
  /** Whether OpenAI takes a breakpoint on it (not assistant output, not a function call). */
  readonly markable: boolean;
}

/** The cacheable elements of an OpenAI body in cache order, each wire unit (message or item) as its parts. */
export interface OpenAiCacheLayout {
  /** Estimated tokens of each tool definition: in the prefix, never marked. */
  readonly tools: readonly number[];
  /** The system text's estimated tokens, or null without one. */
  readonly systemTokens: number | null;
  /** Per request message, the wire units it became, each as its parts. */
  readonly messages: readonly (readonly (readonly CachePart[])[])[];
  /** The first part of the first message is the summary slot (SerializeOptions.summaryHead). */
  readonly summaryHead: boolean;
}

/**
 * Which parts carry a breakpoint. `blocks` keys are "unit:part", counting the wire units of all
 * request messages in order (the system unit and a tail are not counted).
 *
 * @throws ValidationError for a bad minimum or a summary head that cannot carry a breakpoint.
 */
export function chooseOpenAiBreakpoints(
  layout: OpenAiCacheLayout,
  api: PromptCacheOptionsApi,
  minimumTokens: number,
): ChosenBreakpoints {
  const units = layout.messages.flat();
  const firstOfMessage: number[] = [];
  let count = 0;
  for (const message of layout.messages) {
    firstOfMessage.push(count);
    count += message.length;
  }
  let summaryBlock: BlockPosition | undefined;
  if (layout.summaryHead) {
    if (units[0]?.[0]?.markable !== true) {
      throw new ValidationError(
        "options.summaryHead",
        "the first message must start with a part that takes a breakpoint",
      );
    }
    summaryBlock = { message: 0, block: 0 };
  }
  const explicit = api.mode === "explicit";
  const endings: BlockPosition[] = [];
  if (explicit) {
    // Newest first: the last markable part of each message that has one.
    for (let message = layout.messages.length - 1; message >= 0 && endings.length < 2; message -= 1) {
      const ending = lastMarkablePart(layout.messages[message] ?? [], firstOfMessage[message] ?? 0);
      if (ending !== undefined) endings.push(ending);
    }
  }
  return chooseCacheBreakpoints(
    {
      tools: layout.tools,
      system: layout.systemTokens === null ? [] : [layout.systemTokens],
      blocks: units.map((parts) => parts.map((part) => part.tokens)),
    },
    {
      minimumTokens: requireMinimumTokens(minimumTokens),
      markToolsEnd: false,
      rollingBlocks: endings,
      ...(summaryBlock === undefined ? {} : { summaryBlock }),
    },
    Math.max(0, explicit ? api.maxBreakpoints : api.maxBreakpoints - 1),
  );
}

function lastMarkablePart(units: readonly (readonly CachePart[])[], firstUnit: number): BlockPosition | undefined {
  for (let unit = units.length - 1; unit >= 0; unit -= 1) {
    const parts = units[unit] ?? [];
    for (let part = parts.length - 1; part >= 0; part -= 1) {
      if (parts[part]?.markable === true) return { message: firstUnit + unit, block: part };
    }
  }
  return undefined;
}

/** The marked parts by wire unit: unit index → part indexes. */
export function markedPartsByUnit(chosen: ChosenBreakpoints): ReadonlyMap<number, ReadonlySet<number>> {
  const byUnit = new Map<number, Set<number>>();
  for (const key of chosen.blocks) {
    const [unit = 0, part = 0] = key.split(":").map(Number);
    byUnit.set(unit, (byUnit.get(unit) ?? new Set()).add(part));
  }
  return byUnit;
}
