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

/**
 * Where a hash of `head` followed by a buffer stood after the buffer's first `at` bytes: the next
 * buffer that starts with the same `at` bytes (a session's next request, mostly the same one with
 * a turn more) is hashed from there, not from its first byte.
 */
export interface Sha256Checkpoint {
  readonly head: string;
  readonly bytes: Uint8Array;
  readonly at: number;
  readonly state: crypto.Hash;
}

/**
 * sha256HexOfParts([head, bytes]), resumed from `from` when it was taken over the same head and the
 * same first bytes, and a checkpoint of this one at `keepAt` (clamped to the buffer) for the next.
 */
export function sha256HexResumable(
  head: string,
  bytes: Buffer,
  from: Sha256Checkpoint | undefined,
  keepAt: number,
): { readonly hex: string; readonly checkpoint: Sha256Checkpoint } {
  const at = Number.isInteger(keepAt) ? Math.max(0, Math.min(keepAt, bytes.length)) : 0;
  let hash: crypto.Hash;
  let hashed: number;
  if (
    from !== undefined &&
    from.head === head &&
    from.at <= at &&
    bytes.compare(from.bytes, 0, from.at, 0, from.at) === 0
  ) {
    hash = from.state.copy();
    hashed = from.at;
  } else {
    hash = crypto.createHash("sha256").update(head, "utf8");
    hashed = 0;
  }
  if (at > hashed) hash.update(bytes.subarray(hashed, at));
  const state = hash.copy();
  if (bytes.length > at) hash.update(bytes.subarray(at));
  return { hex: hash.digest("hex"), checkpoint: { head, bytes, at, state } };
}
