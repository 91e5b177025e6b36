// Reading a provider's usage JSON: every problem is a ValidationError naming the field by its path
// (`raw.usage_json.prompt_tokens_details.cached_tokens`), so the harness sees which field was wrong.

import { ValidationError } from "@prefix-guard/errors";
import { checkJsonLimits } from "@prefix-guard/events/json-limits";

export type JsonObject = Readonly<Record<string, unknown>>;

export const USAGE_JSON_FIELD = "raw.usage_json";

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The JSON text as an object; anything else (invalid JSON, an array, a number) is refused. */
export function parseUsageObject(json: string): JsonObject {
  // A usage object is a few levels deep; the diagnostics beside it are stored re-serialized.
  checkJsonLimits(json, USAGE_JSON_FIELD);
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw new ValidationError(USAGE_JSON_FIELD, `is not valid JSON (${(error as Error).message})`);
  }
  if (!isObject(parsed)) throw new ValidationError(USAGE_JSON_FIELD, "must be a JSON object");
  return parsed;
}

/** A usage object with the path its fields are named under. */
export class UsageFields {
  constructor(
    readonly object: JsonObject,
    readonly path: string,
  ) {}

  field(name: string): string {
    return `${this.path}.${name}`;
  }

  private count(name: string, value: unknown): number {
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
      throw new ValidationError(this.field(name), `must be a non-negative integer (got ${JSON.stringify(value)})`);
    return value;
  }

  /** A token count the provider always sends. */
  requiredCount(name: string): number {
    const value = this.object[name];
    if (value === undefined || value === null) throw new ValidationError(this.field(name), "is required");
    return this.count(name, value);
  }

  /** A token count the provider sends only sometimes (absent or null = 0). */
  optionalCount(name: string): number {
    const value = this.object[name];
    return value === undefined || value === null ? 0 : this.count(name, value);
  }

  /** The first of several spellings present (Gemini's snake_case and camelCase), as a required count. */
  requiredCountOf(...names: string[]): number {
    const name = names.find((n) => this.object[n] !== undefined && this.object[n] !== null);
    if (name === undefined) throw new ValidationError(this.field(names[0] ?? ""), "is required");
    return this.count(name, this.object[name]);
  }

  optionalCountOf(...names: string[]): number {
    const name = names.find((n) => this.object[n] !== undefined && this.object[n] !== null);
    return name === undefined ? 0 : this.count(name, this.object[name]);
  }

  /** A nested object (absent or null = undefined); any other type is refused. */
  child(name: string): UsageFields | undefined {
    const value = this.object[name];
    if (value === undefined || value === null) return undefined;
    if (!isObject(value)) throw new ValidationError(this.field(name), "must be a JSON object");
    return new UsageFields(value, this.field(name));
  }
}

/**
 * The usage object and the object around it. The JSON may be the usage object itself or a whole
 * response holding it under `key`; diagnostics that providers put beside the usage are read from the
 * envelope.
 */
export function usageAndEnvelope(json: string, key: string): { usage: UsageFields; envelope: JsonObject } {
  const root = parseUsageObject(json);
  const inner = root[key];
  if (isObject(inner)) return { usage: new UsageFields(inner, `${USAGE_JSON_FIELD}.${key}`), envelope: root };
  return { usage: new UsageFields(root, USAGE_JSON_FIELD), envelope: root };
}
