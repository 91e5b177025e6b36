import * as crypto from "node:crypto";

// crypto.hash is Node 20.12+; @prefix-guard/client, which embeds this file, runs from Node 20.10.
const oneShotHash: typeof crypto.hash | undefined = crypto.hash;

/**
 * Lower-case hex sha256 of the UTF-8 text: the one form of every hash in the contract (rules_hash,
 * section fingerprints, tools hash, request ids), so services compare each other's values directly.
 */
export function sha256Hex(text: string): string {
  // The one-shot form skips the Hash object: under half the cost for the short texts most hashes are.
  if (oneShotHash !== undefined) return oneShotHash("sha256", text, "hex");
  return crypto.createHash("sha256").update(text, "utf8").digest("hex");
}

/** sha256Hex of the parts written one after another (strings as UTF-8), without joining them first. */
export function sha256HexOfParts(parts: readonly (string | Uint8Array)[]): string {
  const hash = crypto.createHash("sha256");
  for (const part of parts) {
    if (typeof part === "string") hash.update(part, "utf8");
    else hash.update(part);
  }
  return hash.digest("hex");
}
