// The request cut into cache order from its bytes, the way cutCacheOrder cuts a parsed body, but
// without parsing what an earlier request already taught: an agent's request is the previous one
// plus a turn or two, and its tools, system prompt and history recur byte for byte, call after call
// and across the sessions of one harness.
//
// The body's top-level members and the elements of its block arrays are found by one scan of the
// bytes (json-members). Each block's raw bytes are hashed (sha256 runs natively, ~0.05 ms for
// 85 KiB) and looked up in a cache of the facts they give: the canonical hash, size, token estimate
// and role. Only a block not seen before is parsed, its cache markers removed and its canonical
// JSON written and hashed, exactly as cutCacheOrder does. The result is equal to cutCacheOrder's
// for every body JSON.parse accepts (raw-cut.unit.test.ts checks it over generated bodies).
//
// Canonical texts are not kept: the one block a comparison needs (where a prefix changed) is
// written again from the request's bytes on demand, so what a session keeps in memory is the body
// as sent.
//
// The scan trusts the bytes to be JSON outside the blocks it parses: a body whose other members
// are malformed may be cut, but only an exchange the provider answered with a success is
// fingerprinted, and the provider refuses such a body. A body the scan cannot walk is cut by the
// caller from JSON.parse, as before.

import { hash as oneShotHash } from "node:crypto";
import { canonicalJson } from "@prefix-guard/canonical-json";
import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import { sha256Hex } from "@prefix-guard/events";
import { type BlockKind, type CacheBlock, type CacheCut, withoutCacheMarkers } from "./cache-order";
import { type JsonSpan, jsonArrayElements, jsonObjectLayout, memberOf } from "./json-members";
import { isJsonRecord, type JsonRecord } from "./json-record";
import type { RouteName } from "./routes";

/** What a block's bytes give, whatever request they appear in. */
export interface BlockFacts {
  /** Hex sha256 of the block's canonical JSON. */
  readonly sha256: string;
  /** Bytes of the canonical JSON. */
  readonly bytes: number;
  readonly tokens: number;
  /** For an item: its role (or type); for tools and strings the context gives it. */
  readonly role: string;
}

/** Where facts are remembered between requests (bounded by its owner: an LruMap). */
export interface BlockFactsCache {
  get(key: string): BlockFacts | undefined;
  set(key: string, facts: BlockFacts): unknown;
}

/**
 * How a block's value is made from its bytes: the tools array (each definition's markers removed),
 * a string as it is (a system string, instructions, a string input), or an item (a message, a
 * system part, an input item) with its markers removed.
 */
type ValueForm = "tools" | "string" | "item";

interface RawBlock {
  readonly kind: BlockKind;
  readonly form: ValueForm;
  /** The role the context gives (tools, a system string or part); null: the item's own role. */
  readonly role: string | null;
  /** A system/developer item leading the list is a system block (OpenAI), decided once facts are known. */
  readonly leadingItem: boolean;
  readonly span: JsonSpan;
}

/**
 * A body already cut, kept so the next body that starts like it is cut without hashing what the two
 * share: a block at the same offsets, of the same form and with the same bytes has the same key and
 * facts (they depend on nothing else).
 */
export interface CutBody {
  readonly bytes: Buffer;
  readonly blocks: readonly { readonly form: ValueForm; readonly span: JsonSpan }[];
  readonly keys: readonly string[];
  readonly facts: readonly BlockFacts[];
}

export interface RawCut {
  readonly cut: CacheCut;
  /** Each block's estimated tokens, by index. */
  readonly tokens: readonly number[];
  /** A block's canonical text, written again from its bytes (only a changed block needs it). */
  text(index: number): string | undefined;
  /** The top-level members session identity and events read, parsed: model, stream and the provider keys. */
  readonly fields: JsonRecord;
  /** The sha256 of each block's bytes with its form, by index: equal keys, equal blocks. */
  readonly blockKeys: readonly string[];
  /** This body as a CutBody, for the next one that starts like it. */
  readonly body: CutBody;
  /** What an earlier body is found by: the first block's form, offsets and edge bytes (firstBlockShape). */
  readonly firstBlockShape: string;
}

/**
 * The earlier body to compare with, found by the shape of this body's first block; undefined:
 * none. It is used only if its first block holds the same bytes at the same offsets (memcmp).
 */
export type EarlierBody = (firstBlockShape: string) => CutBody | undefined;

/** Bytes of each end of the first block in its shape: enough to tell most bodies apart cheaply. */
const SHAPE_EDGE_BYTES = 24;

/**
 * The first block's form, offsets and first and last bytes. Finding the earlier body by this rather
 * than by the block's hash saves hashing the first block (an agent's tools, ~29 KiB in the bench's
 * bodies: ~20 µs) on every request; a shape shared by other bytes is told apart by the memcmp.
 */
function firstBlockShapeOf(bytes: Buffer, block: RawBlock): string {
  const { start, end } = block.span;
  const head = bytes.toString("latin1", start, Math.min(end, start + SHAPE_EDGE_BYTES));
  const tail = bytes.toString("latin1", Math.max(start, end - SHAPE_EDGE_BYTES), end);
  return `${block.form}:${start}:${end}:${head}${tail}`;
}

function blockKeyOf(bytes: Buffer, block: RawBlock): string {
  return FORM_TAG[block.form] + oneShotHash("sha256", bytes.subarray(block.span.start, block.span.end), "base64");
}

/** Whether block `index` of `earlier` is this block: same form, same offsets, same bytes. */
function sameAsEarlier(bytes: Buffer, block: RawBlock, earlier: CutBody, index: number): boolean {
  const before = earlier.blocks[index];
  if (before === undefined || before.form !== block.form) return false;
  const { start, end } = block.span;
  if (before.span.start !== start || before.span.end !== end || earlier.bytes.length < end) return false;
  return bytes.compare(earlier.bytes, start, end, start, end) === 0;
}

const SYSTEM_ROLES = new Set(["system", "developer"]);
const QUOTE = 0x22;
const OPEN_BRACKET = 0x5b;

/** Members read for identity and the events; small, so parsed. */
const FIELD_MEMBERS = ["model", "stream", "metadata", "prompt_cache_key", "safety_identifier", "user"] as const;

const FORM_TAG: Readonly<Record<ValueForm, string>> = { tools: "t", string: "s", item: "i" };

function isNull(bytes: Buffer, span: JsonSpan): boolean {
  return span.end - span.start === 4 && bytes.toString("latin1", span.start, span.end) === "null";
}

function isEmptyString(span: JsonSpan): boolean {
  return span.end - span.start === 2;
}

class BodyScan {
  readonly blocks: RawBlock[] = [];
  constructor(
    readonly bytes: Buffer,
    private readonly members: Map<string, JsonSpan>,
  ) {}

  member(key: string): JsonSpan | undefined {
    return this.members.get(key);
  }

  firstByte(span: JsonSpan): number | undefined {
    return this.bytes[span.start];
  }

  elements(span: JsonSpan): JsonSpan[] | null {
    return this.firstByte(span) === OPEN_BRACKET ? jsonArrayElements(this.bytes, span.start, span.end) : null;
  }

  /** `body.tools ?? body[fallback]`, as one block when it is a non-empty array. */
  addTools(fallbackKey?: string): void {
    let span = this.member("tools");
    if ((span === undefined || isNull(this.bytes, span)) && fallbackKey !== undefined) span = this.member(fallbackKey);
    if (span === undefined) return;
    const elements = this.elements(span);
    if (elements === null || elements.length === 0) return;
    this.blocks.push({ kind: "tools", form: "tools", role: "tools", leadingItem: false, span });
  }

  /** A non-empty string member as one block. */
  addNonEmptyString(span: JsonSpan | undefined, kind: BlockKind, role: string): void {
    if (span === undefined || this.firstByte(span) !== QUOTE || isEmptyString(span)) return;
    this.blocks.push({ kind, form: "string", role, leadingItem: false, span });
  }

  /** Each element of an array member as an item block. */
  addItems(span: JsonSpan | undefined, kind: BlockKind, role: string | null, leading: boolean): void {
    if (span === undefined) return;
    for (const element of this.elements(span) ?? [])
      this.blocks.push({ kind, form: "item", role, leadingItem: leading, span: element });
  }
}

/** The blocks in cache order, as cache-order.ts's blocksInCacheOrder lists them. */
function rawBlocksInCacheOrder(route: RouteName, scan: BodyScan): readonly RawBlock[] {
  switch (route) {
    case "anthropic_messages": {
      scan.addTools();
      const system = scan.member("system");
      if (system !== undefined && scan.firstByte(system) === QUOTE) scan.addNonEmptyString(system, "system", "system");
      else scan.addItems(system, "system", "system", false);
      scan.addItems(scan.member("messages"), "message", null, false);
      break;
    }
    case "openai_chat":
      scan.addTools("functions");
      scan.addItems(scan.member("messages"), "message", null, true);
      break;
    case "openai_responses": {
      scan.addTools();
      scan.addNonEmptyString(scan.member("instructions"), "system", "system");
      const input = scan.member("input");
      if (input !== undefined && scan.firstByte(input) === QUOTE)
        scan.blocks.push({ kind: "message", form: "string", role: "user", leadingItem: false, span: input });
      else scan.addItems(input, "message", null, true);
      break;
    }
  }
  return scan.blocks;
}

function roleOf(item: unknown): string {
  if (!isJsonRecord(item)) return "unknown";
  if (typeof item.role === "string") return item.role;
  if (typeof item.type === "string") return item.type;
  return "unknown";
}

function blockValueOf(form: ValueForm, parsed: unknown): unknown {
  if (form === "tools") return (parsed as unknown[]).map(withoutCacheMarkers);
  if (form === "item") return withoutCacheMarkers(parsed);
  return parsed;
}

function canonicalTextOf(bytes: Buffer, block: RawBlock, index: number): { text: string; parsed: unknown } {
  const parsed: unknown = JSON.parse(bytes.toString("utf8", block.span.start, block.span.end));
  return { text: canonicalJson(blockValueOf(block.form, parsed), `block[${index}]`), parsed };
}

/**
 * The body cut into cache order, or null when its bytes are not an object the scan can walk.
 * @throws what JSON.parse or canonicalJson throws for a block that is not valid (the caller counts it).
 */
export function cutRawBody(
  route: RouteName,
  bytes: Buffer,
  cache: BlockFactsCache,
  earlierBody?: EarlierBody,
): RawCut | null {
  const layout = jsonObjectLayout(bytes);
  if (layout === null) return null;
  const members = new Map<string, JsonSpan>();
  for (const member of layout.members) {
    // The last occurrence wins, as in JSON.parse (memberOf reads the same way).
    members.set(member.key, { start: member.valueStart, end: member.valueEnd });
  }
  const raw = rawBlocksInCacheOrder(route, new BodyScan(bytes, members));

  const blocks: CacheBlock[] = [];
  const tokens: number[] = [];
  const blockKeys: string[] = [];
  const blockFacts: BlockFacts[] = [];
  let offset = 0;
  let leading = true;
  const first = raw[0];
  const firstBlockShape = first === undefined ? "" : firstBlockShapeOf(bytes, first);
  const candidate = first === undefined ? undefined : earlierBody?.(firstBlockShape);
  const earlier =
    candidate !== undefined && first !== undefined && sameAsEarlier(bytes, first, candidate, 0) ? candidate : undefined;
  for (const [index, block] of raw.entries()) {
    // A block the earlier body has at the same place is not hashed again: a memcmp costs a tenth.
    // The first block was compared when the earlier body was taken.
    const same = earlier !== undefined && (index === 0 || sameAsEarlier(bytes, block, earlier, index));
    const key = same ? (earlier?.keys[index] as string) : blockKeyOf(bytes, block);
    let facts = same ? earlier?.facts[index] : cache.get(key);
    if (facts === undefined) {
      const { text, parsed } = canonicalTextOf(bytes, block, index);
      const size = Buffer.byteLength(text, "utf8");
      facts = { sha256: sha256Hex(text), bytes: size, tokens: estimateTokens(text), role: roleOf(parsed) };
      cache.set(key, facts);
    }
    const role = block.role ?? facts.role;
    let kind = block.kind;
    if (block.leadingItem) {
      leading = leading && SYSTEM_ROLES.has(role);
      kind = leading ? "system" : "message";
    }
    blocks.push({ index, kind, role, sha256: facts.sha256, bytes: facts.bytes, offset });
    tokens.push(facts.tokens);
    blockKeys.push(key);
    blockFacts.push(facts);
    offset += facts.bytes;
  }

  const fields: JsonRecord = {};
  for (const name of FIELD_MEMBERS) {
    const member = memberOf(layout, name);
    if (member !== undefined)
      fields[name] = JSON.parse(bytes.toString("utf8", member.valueStart, member.valueEnd)) as unknown;
  }

  return {
    cut: { blocks, totalBytes: offset },
    tokens,
    fields,
    blockKeys,
    body: { bytes, blocks: raw, keys: blockKeys, facts: blockFacts },
    firstBlockShape,
    text: (index) => {
      const block = raw[index];
      return block === undefined ? undefined : canonicalTextOf(bytes, block, index).text;
    },
  };
}
