// A request body cut into the provider's cache order, block by block, and two cuts compared.
//
// Cache order is the order a provider's prefix cache reads a request in: the tool definitions (one
// block, all of them), then each system block, then each message or input item:
// - Anthropic Messages: `tools`, the `system` string (one block) or each `system` item, `messages`;
// - OpenAI Chat: `tools` (or the legacy `functions`), the leading system/developer messages,
//   the other messages;
// - OpenAI Responses: `tools`, `instructions`, the leading system/developer input items, the other
//   input items (a string `input` is one user block).
// Each block is hashed as canonical JSON with the cache markers removed (Anthropic `cache_control`,
// OpenAI `prompt_cache_breakpoint`, on the block and on its content parts): harnesses move their
// rolling breakpoint every turn, and a moved marker is not a changed prefix. Sizes and offsets are
// in bytes of that canonical text (UTF-8), not of the body as sent.
//
// No content leaves this module in a cut: only hashes, kinds, roles, sizes and offsets. The block
// texts are returned beside it for the bounded session memory that finds where a block diverged.

import { canonicalJson } from "@prefix-guard/canonical-json";
import { ValidationError } from "@prefix-guard/errors";
import { sha256Hex } from "@prefix-guard/events";
import { isJsonRecord, type JsonRecord } from "./json-record";
import type { RouteName } from "./routes";

export type BlockKind = "tools" | "system" | "message";

export interface CacheBlock {
  readonly index: number;
  readonly kind: BlockKind;
  /** "tools"; "system" or "developer"; a message's role, or an input item's type when it has none. */
  readonly role: string;
  /** Hex sha256 of the block's canonical JSON. */
  readonly sha256: string;
  /** Bytes of the block's canonical JSON. */
  readonly bytes: number;
  /** Bytes of canonical JSON before this block (the sum of the earlier blocks' sizes). */
  readonly offset: number;
}

export interface CacheCut {
  readonly blocks: readonly CacheBlock[];
  readonly totalBytes: number;
}

export interface CutResult {
  readonly cut: CacheCut;
  /** Each block's canonical JSON, by index: content, kept only in bounded memory, never emitted. */
  readonly texts: readonly string[];
  /** The same, by index (the shape raw-cut.ts's on-demand texts share). */
  text(index: number): string | undefined;
}

const MARKER_KEYS = ["cache_control", "prompt_cache_breakpoint"] as const;
const SYSTEM_ROLES = new Set(["system", "developer"]);

function hasMarker(record: JsonRecord): boolean {
  return MARKER_KEYS.some((key) => key in record);
}

function withoutMarkerKeys(record: JsonRecord): JsonRecord {
  if (!hasMarker(record)) return record;
  const copy: JsonRecord = { ...record };
  for (const key of MARKER_KEYS) delete copy[key];
  return copy;
}

/** The block as hashed: markers removed from it and from its content parts; nothing else touched. */
export function withoutCacheMarkers(value: unknown): unknown {
  if (!isJsonRecord(value)) return value;
  const record = withoutMarkerKeys(value);
  const content = record.content;
  if (!Array.isArray(content) || !content.some((part) => isJsonRecord(part) && hasMarker(part))) return record;
  return { ...record, content: content.map((part) => (isJsonRecord(part) ? withoutMarkerKeys(part) : part)) };
}

/** A block before hashing: its kind, role and the JSON value that is hashed. */
interface OrderedBlock {
  readonly kind: BlockKind;
  readonly role: string;
  readonly value: unknown;
}

function roleOf(item: unknown): string {
  if (!isJsonRecord(item)) return "unknown";
  if (typeof item.role === "string") return item.role;
  if (typeof item.type === "string") return item.type;
  return "unknown";
}

function toolsBlock(body: JsonRecord, fallbackKey?: string): OrderedBlock[] {
  const tools = body.tools ?? (fallbackKey === undefined ? undefined : body[fallbackKey]);
  if (!Array.isArray(tools) || tools.length === 0) return [];
  return [{ kind: "tools", role: "tools", value: tools.map(withoutCacheMarkers) }];
}

/** Leading system/developer items become system blocks, the rest message blocks. */
function itemBlocks(items: readonly unknown[]): OrderedBlock[] {
  const blocks: OrderedBlock[] = [];
  let leading = true;
  for (const item of items) {
    const role = roleOf(item);
    leading = leading && SYSTEM_ROLES.has(role);
    blocks.push({ kind: leading ? "system" : "message", role, value: withoutCacheMarkers(item) });
  }
  return blocks;
}

function anthropicBlocks(body: JsonRecord): OrderedBlock[] {
  const blocks = toolsBlock(body);
  const system = body.system;
  if (typeof system === "string") {
    if (system.length > 0) blocks.push({ kind: "system", role: "system", value: system });
  } else if (Array.isArray(system)) {
    for (const item of system) blocks.push({ kind: "system", role: "system", value: withoutCacheMarkers(item) });
  }
  if (Array.isArray(body.messages))
    for (const message of body.messages)
      blocks.push({ kind: "message", role: roleOf(message), value: withoutCacheMarkers(message) });
  return blocks;
}

function openAiChatBlocks(body: JsonRecord): OrderedBlock[] {
  const blocks = toolsBlock(body, "functions");
  if (Array.isArray(body.messages)) blocks.push(...itemBlocks(body.messages));
  return blocks;
}

function openAiResponsesBlocks(body: JsonRecord): OrderedBlock[] {
  const blocks = toolsBlock(body);
  if (typeof body.instructions === "string" && body.instructions.length > 0)
    blocks.push({ kind: "system", role: "system", value: body.instructions });
  const input = body.input;
  if (typeof input === "string") blocks.push({ kind: "message", role: "user", value: input });
  else if (Array.isArray(input)) blocks.push(...itemBlocks(input));
  return blocks;
}

/** The body's blocks in cache order, markers removed, not yet hashed. */
function blocksInCacheOrder(route: RouteName, body: JsonRecord): OrderedBlock[] {
  switch (route) {
    case "anthropic_messages":
      return anthropicBlocks(body);
    case "openai_chat":
      return openAiChatBlocks(body);
    case "openai_responses":
      return openAiResponsesBlocks(body);
  }
}

/** @throws ValidationError when the body is not a JSON object. */
export function cutCacheOrder(route: RouteName, body: unknown): CutResult {
  if (!isJsonRecord(body)) throw new ValidationError("body", "must be a JSON object");
  const blocks: CacheBlock[] = [];
  const texts: string[] = [];
  let offset = 0;
  for (const pending of blocksInCacheOrder(route, body)) {
    const index = blocks.length;
    const text = canonicalJson(pending.value, `block[${index}]`);
    const bytes = Buffer.byteLength(text, "utf8");
    blocks.push({ index, kind: pending.kind, role: pending.role, sha256: sha256Hex(text), bytes, offset });
    texts.push(text);
    offset += bytes;
  }
  return { cut: { blocks, totalBytes: offset }, texts, text: (index) => texts[index] };
}

export interface ChangedBlock {
  readonly index: number;
  readonly kind: BlockKind;
  readonly role: string;
  /** `modified`: this request's block differs; `removed`: the request ends before it (history cut). */
  readonly change: "modified" | "removed";
  /** Bytes into the block where the two texts first differ, when both texts were at hand. */
  readonly offsetInBlock: number | null;
  /** The same, counted from the start of the cut (the block's offset plus offsetInBlock). */
  readonly offset: number | null;
}

export interface CutComparison {
  /**
   * identical: same blocks; extended: the previous blocks, then more (a conversation growing);
   * changed: a block differs; truncated: fewer blocks, the kept ones unchanged.
   */
  readonly outcome: "identical" | "extended" | "changed" | "truncated";
  /** Leading blocks equal in both. */
  readonly unchangedBlocks: number;
  readonly firstChanged: ChangedBlock | null;
}

/** Where two texts first differ, in UTF-8 bytes (the shorter one's length when one extends the other). */
export function divergenceOffset(previous: string, current: string): number {
  const a = Buffer.from(previous, "utf8");
  const b = Buffer.from(current, "utf8");
  const length = Math.min(a.length, b.length);
  let index = 0;
  while (index < length && a[index] === b[index]) index += 1;
  return index;
}

/**
 * The previous request's cut against this one. `texts` gives a block's canonical text by index when
 * it is still held (the previous one from session memory); without both texts the offset is null.
 */
export function compareCuts(
  previous: CacheCut,
  current: CacheCut,
  texts: {
    readonly previous?: (index: number) => string | undefined;
    readonly current?: (index: number) => string | undefined;
  } = {},
): CutComparison {
  const shared = Math.min(previous.blocks.length, current.blocks.length);
  let index = 0;
  while (index < shared && previous.blocks[index]?.sha256 === current.blocks[index]?.sha256) index += 1;
  if (index === shared) {
    const outcome =
      previous.blocks.length === current.blocks.length
        ? "identical"
        : previous.blocks.length < current.blocks.length
          ? "extended"
          : "truncated";
    const removed = outcome === "truncated" ? (previous.blocks[index] as CacheBlock) : undefined;
    return {
      outcome,
      unchangedBlocks: index,
      firstChanged:
        removed === undefined
          ? null
          : {
              index,
              kind: removed.kind,
              role: removed.role,
              change: "removed",
              offsetInBlock: 0,
              offset: removed.offset,
            },
    };
  }
  const block = current.blocks[index] as CacheBlock;
  const previousText = texts.previous?.(index);
  const currentText = texts.current?.(index);
  const offsetInBlock =
    previousText === undefined || currentText === undefined ? null : divergenceOffset(previousText, currentText);
  return {
    outcome: "changed",
    unchangedBlocks: index,
    firstChanged: {
      index,
      kind: block.kind,
      role: block.role,
      change: "modified",
      offsetInBlock,
      offset: offsetInBlock === null ? null : block.offset + offsetInBlock,
    },
  };
}
