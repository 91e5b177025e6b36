// A prefix fingerprint says what a request's cacheable prefix was made of, section by section,
// so the monitor can name what changed. It is computed from the neutral model, not the wire
// body: wire-only details such as Anthropic's rolling cache_control marker move every turn and
// must not count as a prefix change, and the same fingerprint then serves every wire format.

import { canonicalJson } from "@prefix-guard/canonical-json";
import { ValidationError } from "@prefix-guard/errors";
import type { ChatMessage, ChatRequest, ContentPart, SystemSection, ToolDefinition } from "./model";
import { appliedCacheRetention } from "./provider-cache";
import { compareCodeUnits } from "./tool-order";
import { MessageMemo } from "./wire-formats/message-memo";

export interface SectionFingerprint {
  readonly key: string;
  /** sha256 of the section text exactly as sent. */
  readonly sha256: string;
  readonly chars: number;
}

export interface PrefixFingerprint {
  readonly model: string;
  /** Non-empty sections in request order (an empty section is not sent, so it is not listed). */
  readonly sections: readonly SectionFingerprint[];
  /** Tools in the order given; differs from the previous value when order or definitions change. */
  readonly toolsHash: string;
  /** Tools sorted by name; equal to the previous value when only the order changed. */
  readonly toolsSetHash: string;
  /** One hash per message, of its role and content. */
  readonly messageHashes: readonly string[];
  readonly historyHash: string;
  /**
   * The opt-in cache retention the body asked for (cache.retention); absent = the provider's default.
   * Not the prefix's content, but the harness's setting for it: a change is named (prefix-monitor).
   */
  readonly cacheRetention?: string;
}

type Sha256 = (text: string) => string;

/** A stored message's hash is computed once per hash function, however many builds it goes into. */
const messageHashMemos = new WeakMap<Sha256, MessageMemo<string>>();

function messageHashMemo(sha256: Sha256): MessageMemo<string> {
  let memo = messageHashMemos.get(sha256);
  if (memo === undefined) {
    memo = new MessageMemo((message, index) => sha256(canonicalJson(neutralMessage(message), `messages[${index}]`)));
    messageHashMemos.set(sha256, memo);
  }
  return memo;
}

export function fingerprintRequest(request: ChatRequest, sha256: Sha256): PrefixFingerprint {
  const memo = messageHashMemo(sha256);
  const messageHashes = request.messages.map((message, index) => memo.of(message, index));
  const sortedTools = [...request.tools].sort((a, b) => compareCodeUnits(a.name, b.name));
  return {
    model: request.model,
    sections: fingerprintSections(request.system, sha256),
    toolsHash: sha256(canonicalJson(request.tools.map(neutralTool), "tools")),
    toolsSetHash: sha256(canonicalJson(sortedTools.map(neutralTool), "tools")),
    messageHashes,
    historyHash: sha256(canonicalJson(messageHashes, "messages")),
    // gpt-5.6+ carries its retention as prompt_cache_options.ttl: a change of it is as much a prefix
    // change as Anthropic's ttl or OpenAI's prompt_cache_retention.
    ...(appliedCacheRetention(request.providerCache) === ""
      ? {}
      : { cacheRetention: appliedCacheRetention(request.providerCache) }),
  };
}

function fingerprintSections(
  sections: readonly SystemSection[],
  sha256: (text: string) => string,
): SectionFingerprint[] {
  const seen = new Set<string>();
  const fingerprints: SectionFingerprint[] = [];
  sections.forEach((section, index) => {
    // Keys identify sections in the comparison; a repeated key would hide one of them.
    if (seen.has(section.key)) {
      throw new ValidationError(`system[${index}].key`, `duplicate section key ${JSON.stringify(section.key)}`);
    }
    seen.add(section.key);
    if (section.text.length === 0) return;
    fingerprints.push({ key: section.key, sha256: sha256(section.text), chars: section.text.length });
  });
  return fingerprints;
}

// Hash inputs are rebuilt field by field so runtime extras on model objects (messageId,
// localDate ...) never change a hash.

function neutralTool(tool: ToolDefinition): Record<string, unknown> {
  return { name: tool.name, description: tool.description, inputSchema: tool.inputSchema };
}

function neutralMessage(message: ChatMessage): Record<string, unknown> {
  return { role: message.role, content: message.content.map(neutralPart) };
}

function neutralPart(part: ContentPart): Record<string, unknown> {
  switch (part.type) {
    case "text":
      return { type: part.type, text: part.text };
    case "image":
      return { type: part.type, mediaType: part.mediaType, url: part.url };
    case "tool_call":
      return { type: part.type, callId: part.callId, name: part.name, argumentsJson: part.argumentsJson };
    case "tool_result":
      return { type: part.type, callId: part.callId, text: part.text, isError: part.isError };
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function isSectionFingerprint(value: unknown): value is SectionFingerprint {
  return (
    isPlainObject(value) &&
    typeof value.key === "string" &&
    typeof value.sha256 === "string" &&
    typeof value.chars === "number"
  );
}

/**
 * Hex characters of each message hash in a stored fingerprint: 64 bits, plenty to tell a rewritten
 * message from the one that stood there before. The row is written on every build and its message
 * list grows with the window: full hashes made it ~35 KB for a 500-turn session's 516 messages, and
 * on MariaDB an update of a row that size took several times as long as one of a small row.
 */
export const STORED_MESSAGE_HASH_CHARS = 16;

const STORED_FORMAT = 2;

/**
 * A fingerprint as stored (pa_prefix_fingerprint.fingerprint_json): canonical JSON with the message
 * hashes cut to STORED_MESSAGE_HASH_CHARS and joined into one string. Read back by
 * parseStoredFingerprint, its message hashes are those cuts; sameMessageHash compares them with full ones.
 */
export function storedFingerprintJson(fingerprint: PrefixFingerprint): string {
  return canonicalJson(
    {
      format: STORED_FORMAT,
      model: fingerprint.model,
      sections: fingerprint.sections,
      toolsHash: fingerprint.toolsHash,
      toolsSetHash: fingerprint.toolsSetHash,
      historyHash: fingerprint.historyHash,
      messageHashCuts: fingerprint.messageHashes.map((hash) => hash.slice(0, STORED_MESSAGE_HASH_CHARS)).join(""),
      cacheRetention: fingerprint.cacheRetention,
    },
    "fingerprint",
  );
}

/** Whether two message hashes are of the same message, either of them possibly cut (stored). */
export function sameMessageHash(a: string, b: string): boolean {
  if (a.length === b.length) return a === b;
  return a.length < b.length ? b.startsWith(a) : a.startsWith(b);
}

const HEX_CUTS = new RegExp(`^(?:[0-9a-f]{${STORED_MESSAGE_HASH_CHARS}})*$`);

function storedMessageHashes(value: Record<string, unknown>): string[] | null {
  // Rows written before the cut form (format 1) hold the full hashes as an array.
  if (value.format === undefined) return isStringArray(value.messageHashes) ? value.messageHashes : null;
  if (value.format !== STORED_FORMAT) return null;
  const cuts = value.messageHashCuts;
  if (typeof cuts !== "string" || !HEX_CUTS.test(cuts)) return null;
  const hashes: string[] = [];
  for (let at = 0; at < cuts.length; at += STORED_MESSAGE_HASH_CHARS) {
    hashes.push(cuts.slice(at, at + STORED_MESSAGE_HASH_CHARS));
  }
  return hashes;
}

/** A fingerprint read back from storage, or null when the text does not hold one (treated as a first build). */
export function parseStoredFingerprint(json: string): PrefixFingerprint | null {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  if (
    !isPlainObject(value) ||
    typeof value.model !== "string" ||
    !Array.isArray(value.sections) ||
    !value.sections.every(isSectionFingerprint) ||
    typeof value.toolsHash !== "string" ||
    typeof value.toolsSetHash !== "string" ||
    typeof value.historyHash !== "string"
  ) {
    return null;
  }
  const messageHashes = storedMessageHashes(value);
  if (messageHashes === null) return null;
  return {
    model: value.model,
    sections: value.sections,
    toolsHash: value.toolsHash,
    toolsSetHash: value.toolsSetHash,
    messageHashes,
    historyHash: value.historyHash,
    ...(typeof value.cacheRetention === "string" ? { cacheRetention: value.cacheRetention } : {}),
  };
}
