// Canonical JSON: the one way request bodies and hash inputs become text. Object keys are sorted
// by UTF-16 code unit (what Array.prototype.sort does without a comparator, independent of locale),
// so two equal values always give the same bytes no matter how their objects were built
// (stanfordnlp/dspy#10216: unstable key order silently breaks prompt caches).
//
// It runs over every request body, so the writer has a fast path that keeps no member paths, and a
// checking path that only runs to name the offending field once the fast path found bad input.
// Parts of a body that were already written (a stored message's wire form, reused turn after turn)
// are passed in as JsonFragment and copied verbatim.
//
// A body goes out as UTF-8, is hashed as UTF-8 and has its tokens estimated, so the build path
// writes it as UTF-8 bytes (canonicalJsonUtf8) and never as one JS string: a body of a few hundred
// reused fragments is a rope of thousands of pieces, and as soon as one piece holds a CJK
// character, flattening it widens every other piece and encoding it walks it char by char. That
// cost about 1 ms per pass over an 85 KB body, and the hash, the token estimate and the gRPC writer
// each made one. Each fragment is a flat string that knows its UTF-8 length and token units instead,
// computed once, and is encoded straight into the body's one buffer.

import { ValidationError } from "@prefix-guard/errors";
import { countTokenUnits, type TokenUnits } from "./tokens";

/** Canonical JSON as UTF-8, with the token units of its text (estimateTokens = tokensOfUnits(units)). */
export interface CanonicalUtf8 {
  readonly bytes: Buffer;
  readonly units: TokenUnits;
}

/**
 * Canonical JSON written earlier (by canonicalJsonUtf8), embedded as is. Only ever built from
 * canonicalJsonUtf8's own output, so the result stays canonical. It keeps its text flat (decoded
 * from its bytes), its UTF-8 length and its token units: a build encodes a flat string straight into
 * the body's buffer, and counts nothing again. Holding the bytes instead would be a little faster to
 * copy, but a few hundred bytes each from Node's shared 8 KB buffer pool pinned whole slabs of it:
 * three times the memory of the text.
 */
export class JsonFragment {
  private constructor(
    readonly json: string,
    readonly byteLength: number,
    readonly units: TokenUnits,
  ) {}

  static of(value: unknown, path = "body"): JsonFragment {
    const { bytes, units } = canonicalJsonUtf8(value, path);
    return new JsonFragment(bytes.toString("utf8"), bytes.length, units);
  }
}

/**
 * Serializes `value` with sorted object keys and no whitespace.
 *
 * Stricter than JSON.stringify where it would silently lose or change data: undefined inside
 * arrays (JSON.stringify writes null), NaN/Infinity (null), functions and symbols (dropped),
 * bigint, non-plain objects such as Date or Map (toJSON / `{}`), and cycles all throw a
 * ValidationError naming the offending path. Object properties whose value is undefined are
 * omitted, which lets optional fields stay unset.
 */
export function canonicalJson(value: unknown, path = "body"): string {
  const text = new TextSink();
  try {
    writeFast(value, 0, text);
    return text.text;
  } catch (error) {
    if (error !== NOT_PLAIN_JSON) throw error;
  }
  const parts: string[] = [];
  writeValue(value, path, parts, new Set<object>());
  return parts.join("");
}

/**
 * canonicalJson(value) as UTF-8 bytes, byte for byte, and the token units of that text. Fragments
 * are encoded from their flat text and counted by their remembered units; only the text between
 * them is measured and counted here. Units add up over the pieces because every piece is whole JSON tokens, so no
 * surrogate pair is ever split between two.
 */
export function canonicalJsonUtf8(value: unknown, path = "body"): CanonicalUtf8 {
  const pieces = new Utf8Pieces();
  try {
    writeFast(value, 0, pieces);
  } catch (error) {
    if (error !== NOT_PLAIN_JSON) throw error;
    // The checking path names the bad field, or writes what only it accepts (very deep data).
    const text = canonicalJson(value, path);
    return { bytes: Buffer.from(text, "utf8"), units: countTokenUnits(text) };
  }
  return pieces.join();
}

/** Where the fast path writes: text, and fragments written inline or kept apart. */
interface JsonSink {
  text: string;
  fragment(fragment: JsonFragment): void;
}

/** All of it as one text (canonicalJson). */
class TextSink implements JsonSink {
  text = "";

  fragment(fragment: JsonFragment): void {
    this.text += fragment.json;
  }
}

/** Text written since the last fragment, and the fragments, in order (canonicalJsonUtf8). */
class Utf8Pieces implements JsonSink {
  text = "";
  private readonly parts: (string | JsonFragment)[] = [];

  fragment(fragment: JsonFragment): void {
    if (this.text.length > 0) this.parts.push(this.text);
    this.text = "";
    this.parts.push(fragment);
  }

  join(): CanonicalUtf8 {
    if (this.text.length > 0) this.parts.push(this.text);
    const { parts } = this;
    let size = 0;
    let wide = 0;
    let other = 0;
    for (const part of parts) {
      const units = typeof part === "string" ? countTokenUnits(part) : part.units;
      size += typeof part === "string" ? Buffer.byteLength(part, "utf8") : part.byteLength;
      wide += units.wide;
      other += units.other;
    }
    const bytes = Buffer.allocUnsafe(size);
    let at = 0;
    for (const part of parts) {
      if (typeof part !== "string") {
        at += bytes.write(part.json, at, part.byteLength, "utf8");
      } else if (part.length === 1 && part.charCodeAt(0) < 0x80) {
        // The commas between reused messages: most of the pieces, one byte each.
        bytes[at] = part.charCodeAt(0);
        at += 1;
      } else {
        at += bytes.write(part, at, "utf8");
      }
    }
    return { bytes, units: { wide, other } };
  }
}

/** The fast path: plain JSON data only (NOT_PLAIN_JSON for anything else), no member paths kept. */
function writeFast(value: unknown, depth: number, sink: JsonSink): void {
  if (typeof value !== "object" || value === null) {
    sink.text += writeScalar(value);
    return;
  }
  if (value instanceof JsonFragment) {
    sink.fragment(value);
    return;
  }
  if (depth > MAX_FAST_DEPTH) throw NOT_PLAIN_JSON;
  if (Array.isArray(value)) {
    const length = value.length;
    sink.text += "[";
    for (let index = 0; index < length; index += 1) {
      const item: unknown = value[index];
      if (item === undefined) throw NOT_PLAIN_JSON;
      if (index > 0) sink.text += ",";
      writeFast(item, depth + 1, sink);
    }
    sink.text += "]";
    return;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) throw NOT_PLAIN_JSON;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  sink.text += "{";
  let first = true;
  for (const key of keys) {
    const member = record[key];
    if (member === undefined) continue;
    sink.text += `${first ? "" : ","}${quoteKey(key)}:`;
    first = false;
    writeFast(member, depth + 1, sink);
  }
  sink.text += "}";
}

// Both writers recurse once per level of nesting. That stays shallow because every JSON text a
// harness sends is held to MAX_JSON_DEPTH (64, @prefix-guard/events/json-limits) before it is parsed:
// tool arguments when session-events stores them, tool schemas in BuildRequest's validation. What
// the wire formats build around them adds a handful of levels, so a body stays far below
// MAX_FAST_DEPTH and the stack. Kept recursive: an explicit stack would slow the hot fast path for
// no gain at these depths.

/** Thrown by the fast path for anything it will not write; the checking path then names the field. */
const NOT_PLAIN_JSON: unique symbol = Symbol("not plain JSON");
/** Deeper than any request body; past it the checking path (which detects cycles) takes over. */
const MAX_FAST_DEPTH = 256;

const quotedKeys = new Map<string, string>();
const MAX_QUOTED_KEYS = 10_000;

function quoteKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (quotedKeys.size < MAX_QUOTED_KEYS) quotedKeys.set(key, quoted);
  }
  return quoted;
}

function writeScalar(value: unknown): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw NOT_PLAIN_JSON;
      return JSON.stringify(value);
    case "object":
      if (value === null) return "null";
      throw NOT_PLAIN_JSON;
    default:
      throw NOT_PLAIN_JSON;
  }
}

/** JSON.parse that reports bad input as a ValidationError on `field` instead of a bare SyntaxError. */
export function parseJsonStrict(text: string, field: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ValidationError(field, `invalid JSON: ${reason}`, { cause: error });
  }
}

function writeValue(value: unknown, path: string, out: string[], ancestors: Set<object>): void {
  switch (typeof value) {
    case "string":
      out.push(JSON.stringify(value));
      return;
    case "boolean":
      out.push(value ? "true" : "false");
      return;
    case "number":
      if (!Number.isFinite(value)) {
        throw new ValidationError(path, `number ${String(value)} is not representable in JSON`);
      }
      out.push(JSON.stringify(value));
      return;
    case "undefined":
      throw new ValidationError(path, "undefined is not representable in JSON");
    case "bigint":
      throw new ValidationError(path, "bigint is not representable in JSON; pass a string or number");
    case "symbol":
      throw new ValidationError(path, "symbol is not representable in JSON");
    case "function":
      throw new ValidationError(path, "function is not representable in JSON");
    case "object":
      if (value === null) {
        out.push("null");
        return;
      }
      if (value instanceof JsonFragment) {
        out.push(value.json);
        return;
      }
      writeObjectOrArray(value, path, out, ancestors);
      return;
  }
}

function writeObjectOrArray(value: object, path: string, out: string[], ancestors: Set<object>): void {
  if (ancestors.has(value)) {
    throw new ValidationError(path, "circular reference");
  }
  ancestors.add(value);
  if (Array.isArray(value)) {
    out.push("[");
    // Index loop instead of forEach so holes in sparse arrays are seen (as undefined) and rejected.
    for (let index = 0; index < value.length; index += 1) {
      if (index > 0) out.push(",");
      writeValue(value[index], `${path}[${index}]`, out, ancestors);
    }
    out.push("]");
  } else {
    const prototype: unknown = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
      throw new ValidationError(path, `${typeof name === "string" ? name : "non-plain object"} is not plain JSON data`);
    }
    const record = value as Record<string, unknown>;
    out.push("{");
    let first = true;
    for (const key of Object.keys(record).sort()) {
      const member = record[key];
      if (member === undefined) continue;
      if (!first) out.push(",");
      first = false;
      out.push(JSON.stringify(key), ":");
      writeValue(member, memberPath(path, key), out, ancestors);
    }
    out.push("}");
  }
  ancestors.delete(value);
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function memberPath(path: string, key: string): string {
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}
