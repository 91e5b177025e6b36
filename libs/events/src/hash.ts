import { createHash } from "node:crypto";

/**
 * Lower-case hex sha256 of the UTF-8 text: the one form of every hash in the contract (rules_hash,
 * section fingerprints, tools hash, request ids), so services compare each other's values directly.
 */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** sha256Hex of the parts written one after another (strings as UTF-8), without joining them first. */
export function sha256HexOfParts(parts: readonly (string | Uint8Array)[]): string {
  const hash = createHash("sha256");
  for (const part of parts) {
    if (typeof part === "string") hash.update(part, "utf8");
    else hash.update(part);
  }
  return hash.digest("hex");
}
