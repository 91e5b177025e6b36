// A response whose one large string field (a request body of ~100 KB) dominates its size.
// The generated encoder writes that string into a writer that starts at 128 bytes and doubles
// (zero-filling and copying at each step) to three times the string's length, then slices the
// result and grpc-js copies it once more: about a fifth of a build's CPU went there. Encoding the
// rest of the message with the string left empty and appending the string field after it writes
// the string once, into a buffer of the exact size. Protobuf parsers accept fields in any order
// (and the other fields are written by the generated code, unchanged), so every client decodes the
// same message.

import type { ServiceDefinition } from "@grpc/grpc-js";

/** Wire type 2: length-delimited. */
const LENGTH_DELIMITED = 2;

function varintSize(value: number): number {
  let size = 1;
  let rest = value;
  while (rest >= 0x80) {
    rest = Math.floor(rest / 0x80);
    size += 1;
  }
  return size;
}

function writeVarint(into: Buffer, at: number, value: number): number {
  let position = at;
  let rest = value;
  while (rest >= 0x80) {
    into[position] = (rest & 0x7f) | 0x80;
    rest = Math.floor(rest / 0x80);
    position += 1;
  }
  into[position] = rest;
  return position + 1;
}

/**
 * A serializer for messages of type T that writes `field` (a proto3 `string` with number
 * `fieldNumber`) after the fields `encode` writes. An empty string is not written, as proto3 does.
 * `utf8Of` may give the field's text already encoded (valid UTF-8 of exactly that text): it is
 * copied as is, and the field itself is not read.
 */
export function trailingStringFieldSerializer<T extends object, K extends keyof T & string>(
  encode: (message: T) => Uint8Array,
  field: K,
  fieldNumber: number,
  utf8Of: (message: T) => Uint8Array | undefined = () => undefined,
): (message: T) => Buffer {
  const tag = fieldNumber * 8 + LENGTH_DELIMITED;
  return (message) => {
    const known = utf8Of(message);
    let text = "";
    if (known === undefined) {
      const value = message[field];
      if (typeof value !== "string") throw new TypeError(`${field} is not a string`);
      text = value;
    }
    const size = known === undefined ? Buffer.byteLength(text, "utf8") : known.byteLength;
    const head = encode(withEmptyField(message, field));
    if (size === 0) return Buffer.from(head.buffer, head.byteOffset, head.byteLength);
    const out = Buffer.allocUnsafe(head.byteLength + varintSize(tag) + varintSize(size) + size);
    out.set(head, 0);
    let position = writeVarint(out, head.byteLength, tag);
    position = writeVarint(out, position, size);
    if (known === undefined) out.write(text, position, size, "utf8");
    else out.set(known, position);
    return out;
  };
}

/** A copy of `message` with `field` empty, made without reading `field` (it may decode lazily). */
function withEmptyField<T extends object>(message: T, field: keyof T & string): T {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(message)) {
    if (key !== field) copy[key] = (message as Record<string, unknown>)[key];
  }
  copy[field] = "";
  return copy as T;
}

/** `definition` with the response serializer of `method` replaced. */
export function withResponseSerializer<T>(
  definition: ServiceDefinition,
  method: string,
  serialize: (message: T) => Buffer,
): ServiceDefinition {
  const original = definition[method];
  if (original === undefined) throw new Error(`no method ${method} in the service definition`);
  return { ...definition, [method]: { ...original, responseSerialize: serialize } };
}
