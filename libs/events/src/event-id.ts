import { randomFillSync } from "node:crypto";

/**
 * Random bytes drawn in bulk: one CSPRNG call per 409 ids instead of one each (a call costs
 * microseconds, and every observed exchange and build takes several ids).
 */
const POOL_BYTES = 4096;
const TAIL_BYTES = 10;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolOffset = POOL_BYTES;

/**
 * A UUIDv7-shaped id: time ordered, so ids sort by creation and index well in MySQL; random tail
 * keeps them unique across instances.
 */
export function newEventId(nowMs: number = Date.now()): string {
  if (poolOffset + TAIL_BYTES > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const bytes = Buffer.allocUnsafe(16);
  // 48 bits of milliseconds, big-endian (exact in a double until the year 10889).
  bytes.writeUIntBE(Math.max(0, Math.floor(nowMs)) % 2 ** 48, 0, 6);
  pool.copy(bytes, 6, poolOffset, poolOffset + TAIL_BYTES);
  poolOffset += TAIL_BYTES;
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
