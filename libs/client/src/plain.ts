/**
 * A decoded message as a caller sees it: the same fields without ts-proto's `_unknownFields`
 * bookkeeping, at every depth. Enum fields stay numbers (typed by their enum); `enumName` turns one
 * into its proto name for a log line, and each message's codec (`BuildRequestResponse.toJSON(r)`)
 * gives the proto3 JSON form with every enum as its name.
 */
export type Plain<T> = T extends Uint8Array
  ? T
  : T extends readonly (infer E)[]
    ? Plain<E>[]
    : T extends object
      ? { [K in keyof T as K extends "_unknownFields" ? never : K]: Plain<T[K]> }
      : T;

/** Copies a decoded message without `_unknownFields` at any depth; bytes are kept as they are. */
export function plain<T>(message: T): Plain<T> {
  return strip(message) as Plain<T>;
}

function strip(value: unknown): unknown {
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return value;
  if (Array.isArray(value)) return value.map(strip);
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) if (key !== "_unknownFields") copy[key] = strip(field);
  return copy;
}

/**
 * The proto name of an enum value, e.g. `enumName(WireFormat, 2)` is "WIRE_FORMAT_ANTHROPIC_MESSAGES";
 * a number the enum does not know (a newer server) reads "UNRECOGNIZED(7)".
 */
export function enumName(enumObject: Readonly<Record<string, string | number>>, value: number): string {
  const name = enumObject[value];
  return typeof name === "string" && name !== "UNRECOGNIZED" ? name : `UNRECOGNIZED(${value})`;
}
