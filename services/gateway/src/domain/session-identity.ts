// Which session a forwarded request belongs to, so consecutive requests of one conversation are
// compared with each other. In this order:
// 1. the `x-prefix-guard-session` header, when the harness (or whoever runs it) sets one: 1–128
//    characters of [A-Za-z0-9._:-]; any other value is refused before anything is forwarded;
// 2. the provider's own key for the conversation: Anthropic `metadata.user_id`; OpenAI
//    `prompt_cache_key`, then `safety_identifier`, then `user`. A key that fits the header's rules
//    is used as is; any other (too long, or an e-mail address) as `gw-key-` + the first 32 hex of
//    its sha256, so no raw identifier of a person goes into an event;
// 3. derived: `gw-` + the first 32 hex of sha256 over the canonical JSON of
//    [system blocks, tool definitions, first user message] (cache markers removed; null for a part
//    the body lacks). Stable over a conversation's turns, but a change to the system prompt or the
//    tools starts a new derived session: set 1 or 2 to see such a change as a prefix change.

import { sha256Hex } from "@prefix-guard/events";
import type { CacheBlock } from "./cache-order";
import { isJsonRecord, type JsonRecord } from "./json-record";
import type { RouteName } from "./routes";

export const SESSION_HEADER = "x-prefix-guard-session";

const SESSION_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export type SessionSource = "header" | "provider_key" | "derived";

export interface SessionIdentity {
  readonly id: string;
  readonly source: SessionSource;
  /** For provider_key: the body field it came from (`metadata.user_id`, `prompt_cache_key` ...). */
  readonly field?: string;
}

export type SessionHeaderCheck =
  | { readonly kind: "absent" }
  | { readonly kind: "valid"; readonly id: string }
  /** `reason` completes "header x-prefix-guard-session ..." and never repeats the value. */
  | { readonly kind: "invalid"; readonly reason: string };

/** The header as node:http gives it (repeated custom headers arrive joined with ", "). */
export function checkSessionHeader(value: string | readonly string[] | undefined): SessionHeaderCheck {
  if (value === undefined) return { kind: "absent" };
  if (typeof value !== "string") return { kind: "invalid", reason: "must be given once" };
  if (!SESSION_ID.test(value)) return { kind: "invalid", reason: "must be 1–128 characters of A-Z a-z 0-9 . _ : -" };
  return { kind: "valid", id: value };
}

const PROVIDER_KEYS: Readonly<Record<RouteName, readonly (readonly string[])[]>> = {
  anthropic_messages: [["metadata", "user_id"]],
  openai_chat: [["prompt_cache_key"], ["safety_identifier"], ["user"]],
  openai_responses: [["prompt_cache_key"], ["safety_identifier"], ["user"]],
};

function stringAt(body: JsonRecord, path: readonly string[]): string | undefined {
  let value: unknown = body;
  for (const key of path) {
    if (!isJsonRecord(value)) return undefined;
    value = value[key];
  }
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

const hashed = (prefix: string, text: string): string => prefix + sha256Hex(text).slice(0, 32);

/** The provider's own conversation key, if the body has one. */
export function providerKeySession(route: RouteName, body: JsonRecord): SessionIdentity | null {
  for (const path of PROVIDER_KEYS[route]) {
    const key = stringAt(body, path);
    if (key === undefined) continue;
    return { id: SESSION_ID.test(key) ? key : hashed("gw-key-", key), source: "provider_key", field: path.join(".") };
  }
  return null;
}

/** The blocks a derived key is written from: every system block, the tools, the first user message. */
export function derivedKeyBlocks(blocks: readonly CacheBlock[]): number[] {
  const indexes: number[] = [];
  let firstUser = false;
  for (const block of blocks) {
    if (block.kind === "system" || block.kind === "tools") indexes.push(block.index);
    else if (!firstUser && block.role === "user") {
      indexes.push(block.index);
      firstUser = true;
    }
  }
  return indexes;
}

/** A cut with a way to its blocks' canonical texts (cutCacheOrder's array, or written on demand). */
export interface CutTexts {
  readonly cut: { readonly blocks: readonly CacheBlock[] };
  text(index: number): string | undefined;
}

/**
 * `gw-` + sha256 of [system, tools, first user message]: see the header comment. Written from the
 * blocks' canonical texts: the canonical JSON of an array is its items' canonical JSON between
 * brackets and commas, so nothing is serialized twice.
 */
export function derivedSession(cut: CutTexts): SessionIdentity {
  const system: string[] = [];
  let tools = "null";
  let firstUser = "null";
  for (const index of derivedKeyBlocks(cut.cut.blocks)) {
    const block = cut.cut.blocks[index] as CacheBlock;
    const text = cut.text(index) ?? "null";
    if (block.kind === "system") system.push(text);
    else if (block.kind === "tools") tools = text;
    else firstUser = text;
  }
  const key = `[${system.length > 0 ? `[${system.join(",")}]` : "null"},${tools},${firstUser}]`;
  return { id: hashed("gw-", key), source: "derived" };
}

/**
 * @param headerId the validated header value (checkSessionHeader), or null when absent.
 * @param body the body's top-level members (at least those holding the provider keys).
 * @param derived the derived identity, asked for only when neither the header nor a key names the session.
 */
export function sessionIdentity(
  route: RouteName,
  headerId: string | null,
  body: JsonRecord,
  derived: () => SessionIdentity,
): SessionIdentity {
  if (headerId !== null) return { id: headerId, source: "header" };
  return providerKeySession(route, body) ?? derived();
}
