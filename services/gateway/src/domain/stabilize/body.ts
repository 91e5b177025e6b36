// Where the parts stabilize mode touches live in each provider's body, and copy-on-write edits of
// them. An edit never mutates the parsed body it was given (the caller keeps it for observation):
// it returns a new object along the edited path and shares everything else. Replacing a member
// keeps its key where it was, so a re-serialized body lists its keys in the client's order.
//
// The system prompt, in cache order (as cache-order.ts cuts it):
// - Anthropic Messages: the `system` string, or each text item of the `system` array;
// - OpenAI Chat: the leading system/developer messages (a string content, or each text part);
// - OpenAI Responses: `instructions`, then the leading system/developer input items.
// The conversation is `messages` (Anthropic, Chat) or `input` (Responses; a string `input` is one
// user message).

import { canonicalJson } from "@prefix-guard/canonical-json";
import { sha256Hex } from "@prefix-guard/events";
import { withoutCacheMarkers } from "../cache-order";
import { isJsonRecord, type JsonRecord } from "../json-record";
import type { RouteName } from "../routes";

const SYSTEM_ROLES = new Set(["system", "developer"]);

/** `body` with `key` set to `value` (same position when the key exists). */
export function withMember(body: JsonRecord, key: string, value: unknown): JsonRecord {
  return { ...body, [key]: value };
}

/** The text part type a route's user and system content arrays use. */
export function textPartType(route: RouteName): "text" | "input_text" {
  return route === "openai_responses" ? "input_text" : "text";
}

/** The key of the conversation list: `messages`, or Responses' `input`. */
export function conversationKey(route: RouteName): "messages" | "input" {
  return route === "openai_responses" ? "input" : "messages";
}

/** The conversation items (an array `input` or `messages`), or null when the body has none. */
export function conversationOf(route: RouteName, body: JsonRecord): readonly unknown[] | null {
  const items = body[conversationKey(route)];
  return Array.isArray(items) ? items : null;
}

/** A Responses input item that is a message (typed `message`, or the untyped short form). */
function isResponsesMessage(item: JsonRecord): boolean {
  return item.type === undefined || item.type === "message";
}

/** Whether `item` is a system/developer message of the route (Anthropic has none in `messages`). */
function isSystemItem(route: RouteName, item: unknown): item is JsonRecord {
  if (route === "anthropic_messages" || !isJsonRecord(item) || typeof item.role !== "string") return false;
  if (route === "openai_responses" && !isResponsesMessage(item)) return false;
  return SYSTEM_ROLES.has(item.role);
}

/** How many leading conversation items belong to the system prompt (0 for Anthropic). */
export function leadingSystemCount(route: RouteName, items: readonly unknown[]): number {
  let count = 0;
  while (count < items.length && isSystemItem(route, items[count])) count += 1;
  return count;
}

/**
 * A message the user wrote, as opposed to tool output: role user, and for Anthropic no tool_result
 * block (those carry tool output, and must come first in their message, so nothing may go before
 * them). Responses: a user message item.
 */
export function isRealUserMessage(route: RouteName, item: unknown): item is JsonRecord {
  if (!isJsonRecord(item) || item.role !== "user") return false;
  if (route === "openai_responses" && !isResponsesMessage(item)) return false;
  const content = item.content;
  if (typeof content === "string") return true;
  if (!Array.isArray(content)) return false;
  if (route !== "anthropic_messages") return true;
  return !content.some((block) => isJsonRecord(block) && block.type === "tool_result");
}

/**
 * A message's identity across requests: 32 hex of sha256 over the canonical JSON of [role,
 * content], cache markers removed (harnesses move their rolling breakpoint from message to message,
 * which must not make a message look new). Other members (a Responses item's `type`) are left out,
 * so a string `input` and the same message as an item are one message.
 */
export function messageIdentity(item: JsonRecord): string {
  const bare = withoutCacheMarkers(item) as JsonRecord;
  return sha256Hex(canonicalJson([bare.role ?? null, bare.content ?? null], "message")).slice(0, 32);
}

/** `content` (a string or a content array) with `text` in front, as seed 000 §5.3 puts its tag. */
export function prependText(route: RouteName, content: unknown, text: string): unknown | null {
  if (typeof content === "string") return `${text}\n\n${content}`;
  if (Array.isArray(content)) return [{ type: textPartType(route), text }, ...content];
  return null;
}

/** A system text found in the body: `read` gives it, `write` puts a new one in a body. */
interface SystemSlot {
  readonly text: string;
  readonly write: (body: JsonRecord, text: string) => JsonRecord;
}

/** Text slots of a content value (a string, or the text parts of an array), each with its writer. */
function contentSlots(
  content: unknown,
  partType: string,
  writeContent: (body: JsonRecord, content: unknown) => JsonRecord,
  readContent: (body: JsonRecord) => unknown,
): SystemSlot[] {
  if (typeof content === "string") return [{ text: content, write: writeContent }];
  if (!Array.isArray(content)) return [];
  const slots: SystemSlot[] = [];
  content.forEach((part, index) => {
    if (!isJsonRecord(part) || part.type !== partType || typeof part.text !== "string") return;
    slots.push({
      text: part.text,
      write: (body, text) => {
        const current = readContent(body);
        if (!Array.isArray(current)) return body;
        const parts = [...current];
        parts[index] = { ...(current[index] as JsonRecord), text };
        return writeContent(body, parts);
      },
    });
  });
  return slots;
}

function itemContentWriter(key: string, index: number) {
  return {
    read: (body: JsonRecord): unknown => {
      const items = body[key];
      return Array.isArray(items) && isJsonRecord(items[index]) ? items[index].content : undefined;
    },
    write: (body: JsonRecord, content: unknown): JsonRecord => {
      const items = body[key];
      if (!Array.isArray(items) || !isJsonRecord(items[index])) return body;
      const copy = [...items];
      copy[index] = { ...items[index], content };
      return withMember(body, key, copy);
    },
  };
}

/** The system prompt's text slots, in cache order. */
export function systemSlots(route: RouteName, body: JsonRecord): SystemSlot[] {
  const slots: SystemSlot[] = [];
  if (route === "anthropic_messages") {
    const readSystem = (current: JsonRecord) => current.system;
    slots.push(
      ...contentSlots(body.system, "text", (current, system) => withMember(current, "system", system), readSystem),
    );
    return slots;
  }
  const partType = textPartType(route);
  if (route === "openai_responses" && typeof body.instructions === "string")
    slots.push({ text: body.instructions, write: (current, text) => withMember(current, "instructions", text) });
  const key = conversationKey(route);
  const items = conversationOf(route, body) ?? [];
  const leading = leadingSystemCount(route, items);
  for (let index = 0; index < leading; index += 1) {
    const item = items[index] as JsonRecord;
    const writer = itemContentWriter(key, index);
    slots.push(...contentSlots(item.content, partType, writer.write, writer.read));
  }
  return slots;
}
