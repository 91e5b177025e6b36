import { BinaryReader } from "@bufbuild/protobuf/wire";
import type { ServiceDefinition } from "@grpc/grpc-js";
import { ValidationError } from "@prefix-guard/errors";

// Protobuf decoding is lenient by design: invalid UTF-8 becomes U+FFFD, unknown fields and fields
// sent with the wrong wire type are kept aside and ignored, and a malformed frame throws inside
// grpc-js (which answers INTERNAL). For a service whose rule is "bad input gets a clear error and
// changes nothing", each of those must be an INVALID_ARGUMENT before any handler runs.

const fatalUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
function decodeUtf8Strictly(bytes: Uint8Array): string {
  try {
    return fatalUtf8.decode(bytes);
  } catch {
    throw new ValidationError("request", "a string field is not valid UTF-8", { reason: "invalid_utf8" });
  }
}

const decodeFailure = Symbol("decodeFailure");
interface DecodeFailure {
  readonly [decodeFailure]: ValidationError;
}

function snake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Throws for the first `_unknownFields` entry anywhere in the decoded message (ts-proto unknownFields=true). */
function rejectUnknownFieldsDeep(value: unknown, path: string): void {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) rejectUnknownFieldsDeep(item, `${path}[${i}]`);
    return;
  }
  if (typeof value !== "object" || value === null || value instanceof Uint8Array) return;
  const record = value as Record<string, unknown>;
  const unknown = record._unknownFields as Record<string, unknown> | undefined;
  if (unknown) {
    const first = Object.keys(unknown)[0];
    if (first !== undefined) {
      const tag = Number(first);
      const where = path.length > 0 ? path : "request";
      throw new ValidationError(
        where,
        `unknown field number ${tag >>> 3} (or a known field sent with the wrong wire type ${tag & 7})`,
        { reason: "unknown_field" },
      );
    }
  }
  for (const [key, child] of Object.entries(record)) {
    if (key === "_unknownFields") continue;
    // oneof=unions-value: { $case, value } — the value carries the case's name.
    const name = key === "value" && typeof record.$case === "string" ? snake(record.$case) : snake(key);
    rejectUnknownFieldsDeep(child, path.length > 0 ? `${path}.${name}` : name);
  }
}

export function takeDecodeFailure(request: unknown): ValidationError | undefined {
  return typeof request === "object" && request !== null && decodeFailure in request
    ? (request as DecodeFailure)[decodeFailure]
    : undefined;
}

/** A copy of the definition whose request decoders are strict; failures reach the handler wrapper as a marker. */
export function withStrictRequestDecoding(definition: ServiceDefinition): ServiceDefinition {
  const strict: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(definition)) {
    strict[name] = {
      ...method,
      requestDeserialize: (buffer: Buffer) => {
        try {
          // ts-proto decoders take a BinaryReader as well as bytes; ours carries the strict UTF-8 decoder.
          const message = method.requestDeserialize(new BinaryReader(buffer, decodeUtf8Strictly) as unknown as Buffer);
          rejectUnknownFieldsDeep(message, "");
          return message;
        } catch (error) {
          const failure =
            error instanceof ValidationError
              ? error
              : new ValidationError(
                  "request",
                  `malformed protobuf: ${error instanceof Error ? error.message : String(error)}`,
                  { reason: "malformed_request", cause: error },
                );
          return { [decodeFailure]: failure } satisfies DecodeFailure;
        }
      },
    };
  }
  return strict as ServiceDefinition;
}
