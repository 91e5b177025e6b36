// Canonical JSON: the one way request bodies and hash inputs become text. Object keys are sorted
// by UTF-16 code unit (what Array.prototype.sort does without a comparator, independent of locale),
// so two equal values always give the same bytes no matter how their objects were built
// (stanfordnlp/dspy#10216: unstable key order silently breaks prompt caches).

import { ValidationError } from "@prefix-guard/errors";

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
  const parts: string[] = [];
  writeValue(value, path, parts, new Set<object>());
  return parts.join("");
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
