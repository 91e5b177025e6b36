import { describe, expect, it } from "vitest";
import { sha256HexOfParts, sha256HexResumable } from "./hash";

/** A deterministic byte source (xorshift), so a failure names a case that can be run again. */
function bytesOf(seed: number, length: number): Buffer {
  let x = seed | 1;
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0x7f;
  }
  return out;
}

describe("sha256HexResumable", () => {
  it("equals the hash from the first byte, whether it resumes or not", () => {
    for (let seed = 1; seed <= 60; seed++) {
      const first = bytesOf(seed, 500 + seed * 37);
      const keepAt = (seed * 53) % (first.length + 20);
      const head = `${seed % 3}:s${seed % 3}\n`;
      const one = sha256HexResumable(head, first, undefined, keepAt);
      expect(one.hex).toBe(sha256HexOfParts([head, first]));
      // The next: the same first bytes and another tail, or changed anywhere, or another head.
      const cut = (seed * 97) % first.length;
      const tail = bytesOf(seed + 1000, seed * 11);
      const next = Buffer.concat([first.subarray(0, cut), tail]);
      const changedEarly = Buffer.from(next);
      const at = seed % Math.max(1, changedEarly.length);
      if (changedEarly.length > 0) changedEarly[at] = (changedEarly[at] ?? 0) ^ 0x01;
      for (const [nextHead, body] of [
        [head, next],
        [head, changedEarly],
        [`${head}x`, next],
      ] as const) {
        const resumed = sha256HexResumable(nextHead, body, one.checkpoint, cut + 5);
        expect(resumed.hex).toBe(sha256HexOfParts([nextHead, body]));
        expect(sha256HexResumable(nextHead, body, resumed.checkpoint, body.length).hex).toBe(resumed.hex);
      }
    }
  });

  it("resumes from the checkpoint when the first bytes match (the state is copied, never consumed)", () => {
    const body = bytesOf(7, 4000);
    const first = sha256HexResumable("h", body, undefined, 3000);
    expect(first.checkpoint.at).toBe(3000);
    // A stand-in state whose digest differs shows which path ran.
    const marked = { ...first.checkpoint, state: sha256HexResumable("other", body, undefined, 3000).checkpoint.state };
    expect(sha256HexResumable("h", body, marked, 3500).hex).not.toBe(first.hex);
    // Bytes that differ before the checkpoint: hashed from the start, so the stand-in is not used.
    const changed = Buffer.from(body);
    changed[10] = (changed[10] ?? 0) ^ 1;
    expect(sha256HexResumable("h", changed, marked, 3500).hex).toBe(sha256HexOfParts(["h", changed]));
    // The real checkpoint can be resumed from again and again.
    expect(sha256HexResumable("h", body, first.checkpoint, 3500).hex).toBe(first.hex);
    expect(sha256HexResumable("h", body, first.checkpoint, 3500).hex).toBe(first.hex);
  });
});
