import { BinaryReader, type BinaryWriter } from "@bufbuild/protobuf/wire";
import { ValidationError } from "@prefix-guard/errors";

/** The shape ts-proto generates for every message. */
export interface EnvelopeCodec<T> {
  encode(message: T, writer?: BinaryWriter): BinaryWriter;
  decode(input: BinaryReader | Uint8Array, length?: number): T;
}

export function encodeEnvelope<T>(codec: EnvelopeCodec<T>, message: T): Uint8Array {
  return codec.encode(message).finish();
}

/** Decodes bytes; any wire-format error becomes a ValidationError so consumers can route it to the DLQ. */
export function decodeEnvelope<T>(codec: EnvelopeCodec<T>, bytes: Uint8Array, what: string): T {
  try {
    return codec.decode(new BinaryReader(bytes));
  } catch (error) {
    throw new ValidationError(what, `undecodable protobuf: ${error instanceof Error ? error.message : String(error)}`, {
      reason: "undecodable",
      cause: error,
    });
  }
}
