// kafkajs is patched (patches/kafkajs@2.2.4.patch): its encoder's buffers are not zero-filled, and
// the record batch CRC-32C is computed eight bytes per step. A broker rejects a batch whose CRC is
// wrong, so both are checked here against references, on batches that decode back to what went in.
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";

const require = createRequire(import.meta.url);
const kafkajsRoot = require.resolve("kafkajs/package.json").replace(/package\.json$/, "");
const crc32C = require(`${kafkajsRoot}src/protocol/recordBatch/crc32C/crc32C.js`) as (buffer: Buffer) => number;
const { RecordBatch } = require(`${kafkajsRoot}src/protocol/recordBatch/v0/index.js`) as {
  RecordBatch: (batch: Record<string, unknown>) => Promise<{ buffer: Buffer }>;
};
const Record = require(`${kafkajsRoot}src/protocol/recordBatch/record/v0/index.js`) as (
  record: Record<string, unknown>,
) => unknown;
const Decoder = require(`${kafkajsRoot}src/protocol/decoder.js`) as new (buffer: Buffer) => unknown;
const decodeRecordBatch = require(`${kafkajsRoot}src/protocol/recordBatch/v0/decoder.js`) as (
  decoder: unknown,
) => Promise<{ records: { key: Buffer; value: Buffer; headers: Record<string, Buffer> }[] }>;

/** CRC-32C one bit at a time: the definition. */
function referenceCrc32C(bytes: Uint8Array): number {
  let crc = ~0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return ~crc >>> 0;
}

describe("patched kafkajs", () => {
  it("computes CRC-32C as defined, at every length and alignment", () => {
    expect(crc32C(Buffer.from("123456789"))).toBe(0xe3069283);
    expect(crc32C(Buffer.alloc(0))).toBe(0);
    const bytes = randomBytes(4_200);
    for (let length = 0; length < 70; length++) {
      for (const start of [0, 1, 3, 7]) {
        const slice = bytes.subarray(start, start + length);
        expect(crc32C(slice)).toBe(referenceCrc32C(slice));
      }
    }
    for (const length of [511, 512, 1_024, 4_099])
      expect(crc32C(bytes.subarray(0, length))).toBe(referenceCrc32C(bytes.subarray(0, length)));
  });

  it("encodes record batches that decode to what went in, under the CRC the broker checks", async () => {
    const sent = Array.from({ length: 40 }, (_, i) => ({
      key: Buffer.from(`session-${i}`),
      value: randomBytes((i * 97) % 3_000),
      headers: {
        ce_id: Buffer.from(`event-${i}`),
        ce_type: Buffer.from("prefixguard.test"),
        "pg-seq": Buffer.from(String(i)),
      },
    }));
    const now = Date.now();
    const encoded = await RecordBatch({
      compression: 0,
      firstOffset: "0",
      firstTimestamp: now,
      maxTimestamp: now,
      lastOffsetDelta: sent.length - 1,
      producerId: 1,
      producerEpoch: 0,
      firstSequence: 0,
      records: sent.map((r, i) => Record({ offsetDelta: i, timestampDelta: 0, ...r })),
    });
    const bytes = encoded.buffer;
    // firstOffset (8) + length (4) + partition leader epoch (4) + magic (1), then the CRC of the rest.
    expect(bytes.readUInt32BE(17)).toBe(referenceCrc32C(bytes.subarray(21)));
    const decoded = await decodeRecordBatch(new Decoder(bytes));
    expect(decoded.records.map((r) => [r.key, r.value, r.headers])).toEqual(
      sent.map((r) => [r.key, r.value, r.headers]),
    );
  });
});
