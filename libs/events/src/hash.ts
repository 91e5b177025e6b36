import { createHash } from "node:crypto";

/**
 * Lower-case hex sha256 of the UTF-8 text: the one form of every hash in the contract (rules_hash,
 * section fingerprints, tools hash, request ids), so services compare each other's values directly.
 */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}
