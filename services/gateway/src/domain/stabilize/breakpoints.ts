// The breakpoints rule: cache breakpoints at the body's stable boundaries when the client placed
// none, for the models whose provider caches at explicit breakpoints (provider catalogue, cacheApi):
//
// - Anthropic (`cache_control`): `{"type":"ephemeral"}` on the last tool, the last system block and
//   the last block of the newest user message: the tools and the system prompt stay cached when the
//   conversation changes, and the newest turn is what the next request reads back. A string system
//   prompt or user content becomes one text block to carry it.
// - OpenAI gpt-5.6 and later (`prompt_cache_options`): `"prompt_cache_breakpoint":{"mode":"explicit"}`
//   on the last part of the leading system/developer messages (OpenAI takes none on a tool or on
//   Responses' `instructions`); OpenAI places its own implicit breakpoint on the newest message.
// - Older OpenAI models cache implicitly: nothing is placed.
//
// A breakpoint goes only where the estimated prefix through it reaches the family's
// minimumCacheableTokens (below it the provider caches nothing). The estimate is prompt-assembly's
// (@prefix-guard/canonical-json/tokens) over each element's JSON; an image's base64 data
// overestimates it, which can only place a breakpoint the provider then ignores. A body with any breakpoint or cache_control anywhere, or a model the
// catalogue does not know, is left as it is.

import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import { familyOf, type ProviderCatalogue } from "@prefix-guard/providers";
import { isJsonRecord, type JsonRecord } from "../json-record";
import type { RouteName } from "../routes";
import { conversationKey, conversationOf, leadingSystemCount, textPartType, withMember } from "./body";

const MARKER_KEYS = new Set(["cache_control", "prompt_cache_breakpoint"]);
const ANTHROPIC_MARKER = { type: "ephemeral" } as const;
const OPENAI_MARKER = { mode: "explicit" } as const;

function estimatedTokens(value: unknown): number {
  return estimateTokens(typeof value === "string" ? value : (JSON.stringify(value) ?? ""));
}

/** Whether a cache marker key appears anywhere in `value` (a false alarm only ever skips the rule). */
export function hasCacheMarker(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasCacheMarker);
  if (!isJsonRecord(value)) return false;
  for (const key in value) if (MARKER_KEYS.has(key) || hasCacheMarker(value[key])) return true;
  return false;
}

/** A content block that takes a marker: a record, not thinking, and not an empty text block. */
function markableBlock(block: unknown): block is JsonRecord {
  if (!isJsonRecord(block) || typeof block.type !== "string") return false;
  if (block.type === "thinking" || block.type === "redacted_thinking") return false;
  return !("text" in block) || (typeof block.text === "string" && block.text.length > 0);
}

/** `content` with `marker` on its last block (a non-empty string becomes one text block), or null. */
function markLast(content: unknown, partType: string, key: string, marker: object): unknown[] | null {
  if (typeof content === "string")
    return content.length === 0 ? null : [{ type: partType, text: content, [key]: marker }];
  if (!Array.isArray(content) || content.length === 0) return null;
  const last = content[content.length - 1];
  if (!markableBlock(last)) return null;
  return [...content.slice(0, -1), { ...last, [key]: marker }];
}

function anthropicBreakpoints(body: JsonRecord, minimumTokens: number, maxBreakpoints: number): JsonRecord | null {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const system = body.system;
  const messages = conversationOf("anthropic_messages", body) ?? [];
  let cumulative = tools.reduce((sum: number, tool) => sum + estimatedTokens(tool), 0);
  const toolsEnd = cumulative;
  if (typeof system === "string") cumulative += estimatedTokens(system);
  else if (Array.isArray(system)) for (const block of system) cumulative += estimatedTokens(block);
  const systemEnd = cumulative;
  let newestUser = -1;
  let newestUserEnd = 0;
  messages.forEach((message, index) => {
    cumulative += estimatedTokens(isJsonRecord(message) ? message.content : message);
    if (isJsonRecord(message) && message.role === "user") {
      newestUser = index;
      newestUserEnd = cumulative;
    }
  });

  // Newest turn first, then system, then tools: the order kept when the provider allows fewer.
  let next = body;
  let placed = 0;
  const room = () => placed < maxBreakpoints;
  if (newestUser >= 0 && newestUserEnd >= minimumTokens && room()) {
    const message = messages[newestUser] as JsonRecord;
    const content = markLast(message.content, "text", "cache_control", ANTHROPIC_MARKER);
    if (content !== null) {
      const copy = [...messages];
      copy[newestUser] = { ...message, content };
      next = withMember(next, "messages", copy);
      placed += 1;
    }
  }
  if (systemEnd > toolsEnd && systemEnd >= minimumTokens && room()) {
    const marked = markLast(system, "text", "cache_control", ANTHROPIC_MARKER);
    if (marked !== null) {
      next = withMember(next, "system", marked);
      placed += 1;
    }
  }
  const lastTool = tools[tools.length - 1];
  if (isJsonRecord(lastTool) && toolsEnd >= minimumTokens && room()) {
    next = withMember(next, "tools", [...tools.slice(0, -1), { ...lastTool, cache_control: ANTHROPIC_MARKER }]);
    placed += 1;
  }
  return placed === 0 ? null : next;
}

function openAiBreakpoints(route: RouteName, body: JsonRecord, minimumTokens: number): JsonRecord | null {
  const items = conversationOf(route, body);
  if (items === null) return null;
  const leading = leadingSystemCount(route, items);
  if (leading === 0) return null;
  let prefix = Array.isArray(body.tools) ? body.tools.reduce((sum: number, tool) => sum + estimatedTokens(tool), 0) : 0;
  if (route === "openai_responses" && typeof body.instructions === "string")
    prefix += estimatedTokens(body.instructions);
  for (let index = 0; index < leading; index += 1) prefix += estimatedTokens(items[index]);
  if (prefix < minimumTokens) return null;
  const last = items[leading - 1] as JsonRecord;
  const content = markLast(last.content, textPartType(route), "prompt_cache_breakpoint", OPENAI_MARKER);
  if (content === null) return null;
  const copy = [...items];
  copy[leading - 1] = { ...last, content };
  return withMember(body, conversationKey(route), copy);
}

/** The body with breakpoints placed, or null when the rule does not apply to it. */
export function placeCacheBreakpoints(
  route: RouteName,
  body: JsonRecord,
  catalogue: ProviderCatalogue,
): JsonRecord | null {
  if (typeof body.model !== "string" || hasCacheMarker(body)) return null;
  if (route === "anthropic_messages") {
    const family = familyOf(catalogue, body.model, "anthropic");
    if (family?.cacheApi !== "cache_control") return null;
    const maxBreakpoints = catalogue.providers.anthropic?.breakpoints?.maxPerRequest ?? 4;
    return anthropicBreakpoints(body, family.minimumCacheableTokens, maxBreakpoints);
  }
  const family = familyOf(catalogue, body.model, "openai");
  if (family?.cacheApi !== "prompt_cache_options") return null;
  return openAiBreakpoints(route, body, family.minimumCacheableTokens);
}
