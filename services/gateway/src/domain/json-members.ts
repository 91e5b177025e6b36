// The top-level members of a JSON object found in its UTF-8 bytes without parsing it: where each key
// and value starts and ends. It lets the gateway read or edit one member (`stream`, `stream_options`,
// a chunk's `usage`) while every other byte stays exactly as the client or the provider wrote it,
// and it costs one pass over the bytes (no object graph is built for an 85 KiB body).
//
// Structural characters are ASCII and UTF-8 never uses bytes below 0x80 inside a multi-byte
// character, so scanning bytes is exact. The scanner trusts the text to be JSON: it only tracks
// strings, escapes and nesting, and answers null when the shape is not an object it can walk.

export interface JsonMember {
  /** The key, decoded (keys the gateway looks for are ASCII; others are decoded as UTF-8). */
  readonly key: string;
  /** Offset of the key's opening quote. */
  readonly keyStart: number;
  /** Offset of the value's first byte. */
  readonly valueStart: number;
  /** Offset just past the value's last byte. */
  readonly valueEnd: number;
}

export interface JsonObjectLayout {
  readonly members: readonly JsonMember[];
  /** Offset of the object's opening brace. */
  readonly open: number;
  /** Offset of the object's closing brace. */
  readonly close: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

const decoder = new TextDecoder();

/** JSON's whitespace: space, LF, CR, tab (undefined past the end of the bytes is none). */
export function isJsonSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

export function skipJsonSpace(bytes: Uint8Array, at: number, end: number): number {
  let index = at;
  while (index < end && isJsonSpace(bytes[index])) index += 1;
  return index;
}

/** A string this long or shorter is walked here; a longer one is searched natively (see jsonStringEnd). */
const SHORT_STRING_BYTES = 32;

/** Offset just past the string whose opening quote is at `at`, or -1 when it does not close. */
function jsonStringEnd(bytes: Uint8Array, at: number, end: number): number {
  // Most strings of an event (keys, ids, flags) are short: a loop here is cheapest for those.
  const walked = Math.min(end, at + 1 + SHORT_STRING_BYTES);
  let index = at + 1;
  while (index < walked) {
    const byte = bytes[index] as number;
    if (byte === BACKSLASH) index += 2;
    else if (byte === QUOTE) return index + 1;
    else index += 1;
  }
  // Long strings are most of a body's bytes: the next quote is found natively (memchr on a Buffer,
  // ten times faster than this loop on an 85 KiB body), then it is escaped when an odd number of
  // backslashes precede it (the opening quote stops the count).
  let from = index;
  while (from < end) {
    const quote = bytes.indexOf(QUOTE, from);
    if (quote === -1 || quote >= end) return -1;
    let backslashes = 0;
    while (bytes[quote - 1 - backslashes] === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
  return -1;
}

/** Offset just past the value starting at `at` (a string, a nested container or a scalar), or -1. */
export function jsonValueEnd(bytes: Uint8Array, at: number, end: number): number {
  const first = bytes[at];
  if (first === QUOTE) return jsonStringEnd(bytes, at, end);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    let index = at;
    while (index < end) {
      const byte = bytes[index] as number;
      if (byte === QUOTE) {
        index = jsonStringEnd(bytes, index, end);
        if (index === -1) return -1;
        continue;
      }
      if (byte === OPEN_BRACE || byte === OPEN_BRACKET) depth += 1;
      else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        depth -= 1;
        if (depth === 0) return index + 1;
      }
      index += 1;
    }
    return -1;
  }
  // A scalar (number, true, false, null) runs to the next separator.
  let index = at;
  while (index < end) {
    const byte = bytes[index] as number;
    if (byte === COMMA || byte === CLOSE_BRACE || byte === CLOSE_BRACKET || isJsonSpace(byte)) break;
    index += 1;
  }
  return index === at ? -1 : index;
}

/** A member's key and where its value starts, read from the key's opening quote at `at`; null when it is not one. */
export function jsonMemberHead(
  bytes: Uint8Array,
  at: number,
  end: number,
): { readonly key: string; readonly keyStart: number; readonly valueStart: number } | null {
  if (bytes[at] !== QUOTE) return null;
  const keyEnd = jsonStringEnd(bytes, at, end);
  if (keyEnd === -1) return null;
  const colon = skipJsonSpace(bytes, keyEnd, end);
  if (bytes[colon] !== COLON) return null;
  return { key: decodeJsonKey(bytes, at, keyEnd), keyStart: at, valueStart: skipJsonSpace(bytes, colon + 1, end) };
}

/** The layout of the JSON object in `bytes[start, end)`, or null when it is not one. */
export function jsonObjectLayout(bytes: Uint8Array, start = 0, end = bytes.length): JsonObjectLayout | null {
  let index = skipJsonSpace(bytes, start, end);
  if (bytes[index] !== OPEN_BRACE) return null;
  const open = index;
  const members: JsonMember[] = [];
  index = skipJsonSpace(bytes, index + 1, end);
  if (bytes[index] === CLOSE_BRACE) return { members, open, close: index };
  while (index < end) {
    const head = jsonMemberHead(bytes, index, end);
    if (head === null) return null;
    const valueStop = jsonValueEnd(bytes, head.valueStart, end);
    if (valueStop === -1) return null;
    members.push({ ...head, valueEnd: valueStop });
    index = skipJsonSpace(bytes, valueStop, end);
    if (bytes[index] === CLOSE_BRACE) {
      if (skipJsonSpace(bytes, index + 1, end) !== end) return null;
      return { members, open, close: index };
    }
    if (bytes[index] !== COMMA) return null;
    index = skipJsonSpace(bytes, index + 1, end);
  }
  return null;
}

/** Where one element of a JSON array starts and ends in the bytes. */
export interface JsonSpan {
  readonly start: number;
  readonly end: number;
}

/** The bytes as text when they are all ASCII (no decoder call: keys are many and short), else null. */
function asciiText(bytes: Uint8Array, start: number, end: number): string | null {
  let text = "";
  for (let index = start; index < end; index += 1) {
    const byte = bytes[index] as number;
    if (byte >= 0x80 || byte === BACKSLASH) return null;
    text += String.fromCharCode(byte);
  }
  return text;
}

/** A member's key from its bytes (its quotes included). */
function decodeJsonKey(bytes: Uint8Array, keyStart: number, keyEnd: number): string {
  const ascii = keyEnd - keyStart <= 2 + SHORT_STRING_BYTES ? asciiText(bytes, keyStart + 1, keyEnd - 1) : null;
  if (ascii !== null) return ascii;
  const inner = bytes.subarray(keyStart + 1, keyEnd - 1);
  // Plain keys (every key a provider API defines) need no JSON unescaping.
  if (!inner.includes(BACKSLASH)) return decoder.decode(inner);
  return JSON.parse(decoder.decode(bytes.subarray(keyStart, keyEnd))) as string;
}

export function memberOf(layout: JsonObjectLayout, key: string): JsonMember | undefined {
  // The last occurrence wins, as in JSON.parse.
  for (let index = layout.members.length - 1; index >= 0; index -= 1) {
    const member = layout.members[index] as JsonMember;
    if (member.key === key) return member;
  }
  return undefined;
}

/** The value's text, for small values (a flag, an options object). */
export function valueText(bytes: Uint8Array, member: JsonMember): string {
  return decoder.decode(bytes.subarray(member.valueStart, member.valueEnd));
}

/**
 * The object without `member`: its key, value and one adjacent comma are cut out, every other byte
 * is kept (whitespace around the cut included).
 */
export function withoutMember(bytes: Uint8Array, layout: JsonObjectLayout, member: JsonMember): Buffer {
  const position = layout.members.indexOf(member);
  const next = layout.members[position + 1];
  const previous = layout.members[position - 1];
  // Cut from the end of the previous value (taking its comma) or up to the next key (taking ours).
  const cutStart = previous !== undefined ? previous.valueEnd : member.keyStart;
  const cutEnd = previous !== undefined ? member.valueEnd : next !== undefined ? next.keyStart : member.valueEnd;
  return Buffer.concat([bytes.subarray(0, cutStart), bytes.subarray(cutEnd)]);
}

/** The object with `member`'s value replaced by `json`. */
export function withValue(bytes: Uint8Array, member: JsonMember, json: string): Buffer {
  return Buffer.concat([
    bytes.subarray(0, member.valueStart),
    Buffer.from(json, "utf8"),
    bytes.subarray(member.valueEnd),
  ]);
}
