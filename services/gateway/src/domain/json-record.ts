export type JsonRecord = Record<string, unknown>;

/** A parsed JSON object (not an array, not null). */
export function isJsonRecord(value: unknown): value is JsonRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
