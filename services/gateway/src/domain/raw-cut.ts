// The request cut into cache order from its bytes, the way cutCacheOrder cuts a parsed body, but
// without parsing what an earlier request already taught: an agent's request is the previous one
// plus a turn or two, and its tools, system prompt and history recur byte for byte, call after call
// and across the sessions of one harness.
//
// The body's top-level members and the elements of its block arrays are found by one walk of the
// bytes (body-scan.ts), and given an earlier body, only the bytes between what the two share at
// their start and at their end are walked. A block inside those shared bytes is the earlier body's
// block (same bytes, so same key and facts), shifted when it lies in the shared end. Any other
// block's raw bytes are hashed (sha256 runs natively, ~0.05 ms for 85 KiB) and looked up in a cache
// of the facts they give: the canonical hash, size, token estimate and role. Only a block not seen
// before is parsed, its cache markers removed and its canonical JSON written and hashed, exactly
// as cutCacheOrder does. The result is equal to cutCacheOrder's for every body JSON.parse accepts,
// whichever earlier body is given (raw-cut.unit.test.ts checks it over generated bodies).
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
import { type ObjectScan, type ScannedMember, type SharedBytes, scanBody, sharedBytes } from "./body-scan";
import { type BlockKind, type CacheBlock, type CacheCut, withoutCacheMarkers } from "./cache-order";
import type { JsonSpan } from "./json-members";
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
 * A body already cut, kept so the next body is cut without walking or hashing what the two share:
 * a block of the same form and the same bytes has the same key and facts (they depend on nothing
 * else).
 */
export interface CutBody {
  readonly bytes: Buffer;
  readonly scan: ObjectScan;
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
  /** This body as a CutBody, for the next one. */
  readonly body: CutBody;
}

function blockKeyOf(bytes: Buffer, block: RawBlock): string {
  return FORM_TAG[block.form] + oneShotHash("sha256", bytes.subarray(block.span.start, block.span.end), "base64");
}

/** The earlier body's blocks found by their start, to tell which of this body's blocks are theirs. */
class EarlierBlocks {
  private readonly byStart = new Map<number, number>();

  constructor(
    private readonly earlier: CutBody,
    private readonly shared: SharedBytes,
  ) {
    earlier.blocks.forEach((block, index) => {
      this.byStart.set(block.span.start, index);
    });
  }

  /**
   * The index of the earlier block with this block's bytes and form, or -1: a block inside the
   * shared start is at the same offsets, one inside the shared end is shifted by the length change.
   */
  indexOf(block: RawBlock): number {
    const { start, end } = block.span;
    let shift: number;
    if (end <= this.shared.prefix) shift = 0;
    else if (start >= this.shared.suffixStart) shift = this.shared.delta;
    else return -1;
    const index = this.byStart.get(start - shift);
    if (index === undefined) return -1;
    const before = this.earlier.blocks[index];
    return before !== undefined && before.form === block.form && before.span.end === end - shift ? index : -1;
  }

  key(index: number): string {
    return this.earlier.keys[index] as string;
  }

  facts(index: number): BlockFacts {
    return this.earlier.facts[index] as BlockFacts;
  }
}

const SYSTEM_ROLES = new Set(["system", "developer"]);
const QUOTE = 0x22;

/** Members read for identity and the events; small, so parsed. */
const FIELD_MEMBERS = ["model", "stream", "metadata", "prompt_cache_key", "safety_identifier", "user"] as const;

const FORM_TAG: Readonly<Record<ValueForm, string>> = { tools: "t", string: "s", item: "i" };

function isNull(bytes: Buffer, span: JsonSpan): boolean {
  return span.end - span.start === 4 && bytes.toString("latin1", span.start, span.end) === "null";
}

function isEmptyString(span: JsonSpan): boolean {
  return span.end - span.start === 2;
}

/** The members whose arrays hold blocks, per route: their elements are found by the body's walk. */
const BLOCK_ARRAYS: Readonly<Record<RouteName, ReadonlySet<string>>> = {
  anthropic_messages: new Set(["tools", "system", "messages"]),
  openai_chat: new Set(["tools", "functions", "messages"]),
  openai_responses: new Set(["tools", "input"]),
};

class BlockListing {
  readonly blocks: RawBlock[] = [];
  constructor(
    readonly bytes: Buffer,
    private readonly members: Map<string, ScannedMember>,
  ) {}

  member(key: string): ScannedMember | undefined {
    return this.members.get(key);
  }

  firstByte(member: ScannedMember): number | undefined {
    return this.bytes[member.valueStart];
  }

  elements(member: ScannedMember): readonly JsonSpan[] | null {
    return member.elements;
  }

  /** `body.tools ?? body[fallback]`, as one block when it is a non-empty array. */
  addTools(fallbackKey?: string): void {
    let member = this.member("tools");
    if ((member === undefined || isNull(this.bytes, spanOf(member))) && fallbackKey !== undefined)
      member = this.member(fallbackKey);
    if (member === undefined) return;
    const elements = this.elements(member);
    if (elements === null || elements.length === 0) return;
    this.blocks.push({ kind: "tools", form: "tools", role: "tools", leadingItem: false, span: spanOf(member) });
  }

  /** A non-empty string member as one block. */
  addNonEmptyString(member: ScannedMember | undefined, kind: BlockKind, role: string): void {
    if (member === undefined || this.firstByte(member) !== QUOTE || isEmptyString(spanOf(member))) return;
    this.blocks.push({ kind, form: "string", role, leadingItem: false, span: spanOf(member) });
  }

  /** Each element of an array member as an item block. */
  addItems(member: ScannedMember | undefined, kind: BlockKind, role: string | null, leading: boolean): void {
    if (member === undefined) return;
    for (const element of this.elements(member) ?? [])
      this.blocks.push({ kind, form: "item", role, leadingItem: leading, span: element });
  }
}

const spanOf = (member: ScannedMember): JsonSpan => ({ start: member.valueStart, end: member.valueEnd });

/** The blocks in cache order, as cache-order.ts's blocksInCacheOrder lists them. */
function rawBlocksInCacheOrder(route: RouteName, scan: BlockListing): readonly RawBlock[] {
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
        scan.blocks.push({ kind: "message", form: "string", role: "user", leadingItem: false, span: spanOf(input) });
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
 * `earlier`: a body cut before (any: what it shares with this one is found from the bytes).
 * @throws what JSON.parse or canonicalJson throws for a block that is not valid (the caller counts it).
 */
export function cutRawBody(route: RouteName, bytes: Buffer, cache: BlockFactsCache, earlier?: CutBody): RawCut | null {
  const resumed =
    earlier === undefined
      ? undefined
      : { body: earlier, scan: earlier.scan, shared: sharedBytes(earlier.bytes, bytes) };
  const walked = BLOCK_ARRAYS[route];
  const scan = scanBody(bytes, (key) => walked.has(key), resumed);
  if (scan === null) return null;
  const members = new Map<string, ScannedMember>();
  // The last occurrence wins, as in JSON.parse.
  for (const member of scan.members) members.set(member.key, member);
  const raw = rawBlocksInCacheOrder(route, new BlockListing(bytes, members));

  const blocks: CacheBlock[] = [];
  const tokens: number[] = [];
  const blockKeys: string[] = [];
  const blockFacts: BlockFacts[] = [];
  let offset = 0;
  let leading = true;
  const earlierBlocks =
    resumed === undefined || raw.length === 0 ? undefined : new EarlierBlocks(resumed.body, resumed.shared);
  for (const [index, block] of raw.entries()) {
    // A block inside the bytes shared with the earlier body is that body's: not hashed again.
    const same = earlierBlocks?.indexOf(block) ?? -1;
    const key = same !== -1 ? (earlierBlocks as EarlierBlocks).key(same) : blockKeyOf(bytes, block);
    let facts = same !== -1 ? (earlierBlocks as EarlierBlocks).facts(same) : cache.get(key);
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
    const member = members.get(name);
    if (member !== undefined)
      fields[name] = JSON.parse(bytes.toString("utf8", member.valueStart, member.valueEnd)) as unknown;
  }

  return {
    cut: { blocks, totalBytes: offset },
    tokens,
    fields,
    blockKeys,
    body: { bytes, scan, blocks: raw, keys: blockKeys, facts: blockFacts },
    text: (index) => {
      const block = raw[index];
      return block === undefined ? undefined : canonicalTextOf(bytes, block, index).text;
    },
  };
}
