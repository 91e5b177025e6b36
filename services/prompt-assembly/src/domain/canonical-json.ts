// Canonical JSON: the one way request bodies and hash inputs become text. Object keys are sorted
// by UTF-16 code unit (what Array.prototype.sort does without a comparator, independent of locale),
// so two equal values always give the same bytes no matter how their objects were built
// (stanfordnlp/dspy#10216: unstable key order silently breaks prompt caches).
//
// It runs over every request body, so the writer has a fast path that keeps no member paths, and a
// checking path that only runs to name the offending field once the fast path found bad input.
// Parts of a body that were already written (a stored message's wire form, reused turn after turn)
// are passed in as JsonFragment and copied verbatim.

import { ValidationError } from "@prefix-guard/errors";

/**
 * Canonical JSON written earlier (by canonicalJson), embedded as is. Only ever built from
 * canonicalJson's own output, so the result stays canonical.
 */
export class JsonFragment {
  private constructor(readonly json: string) {}

  static of(value: unknown, path = "body"): JsonFragment {
    return new JsonFragment(canonicalJson(value, path));
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
  try {
    return writeFast(value, 0);
  } catch (error) {
    if (error !== NOT_PLAIN_JSON) throw error;
  }
  const parts: string[] = [];
  writeValue(value, path, parts, new Set<object>());
  return parts.join("");
}

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

function writeFast(value: unknown, depth: number): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw NOT_PLAIN_JSON;
      return JSON.stringify(value);
    case "object": {
      if (value === null) return "null";
      if (value instanceof JsonFragment) return value.json;
      if (depth > MAX_FAST_DEPTH) throw NOT_PLAIN_JSON;
      if (Array.isArray(value)) {
        const length = value.length;
        let out = "[";
        for (let index = 0; index < length; index += 1) {
          const item: unknown = value[index];
          if (item === undefined) throw NOT_PLAIN_JSON;
          out += index === 0 ? writeFast(item, depth + 1) : `,${writeFast(item, depth + 1)}`;
        }
        return `${out}]`;
      }
      const prototype: unknown = Object.getPrototypeOf(value);
      if (prototype !== Object.prototype && prototype !== null) throw NOT_PLAIN_JSON;
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).sort();
      let out = "{";
      let first = true;
      for (const key of keys) {
        const member = record[key];
        if (member === undefined) continue;
        out += `${first ? "" : ","}${quoteKey(key)}:${writeFast(member, depth + 1)}`;
        first = false;
      }
      return `${out}}`;
    }
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
