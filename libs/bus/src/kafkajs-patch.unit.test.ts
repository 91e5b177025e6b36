// kafkajs is patched (patches/kafkajs@2.2.4.patch): its encoder's buffers are not zero-filled, the
// record batch CRC-32C is computed eight bytes per step, varints are written in place (small
// varlongs without Long objects), and a record's headers go straight into its own buffer. A broker
// rejects a batch whose CRC or framing is wrong, so each is checked here against references: the
// definitions, the bytes unpatched kafkajs writes, and batches that decode back to what went in.
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
const Header = require(`${kafkajsRoot}src/protocol/recordBatch/header/v0/index.js`) as (header: {
  key: string;
  value: unknown;
}) => EncoderInstance;
interface EncoderInstance {
  readonly buffer: Buffer;
  writeVarInt(value: number): EncoderInstance;
  writeVarLong(value: number | string): EncoderInstance;
  writeInt8(value: number): EncoderInstance;
  writeVarIntBytes(value: unknown): EncoderInstance;
  writeVarIntArray(value: readonly EncoderInstance[], type?: string): EncoderInstance;
}
const Encoder = require(`${kafkajsRoot}src/protocol/encoder.js`) as {
  new (): EncoderInstance;
  sizeOfVarLong(value: number | string): number;
  sizeOfVarInt(value: number): number;
};
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

/** Zigzag then LEB128, over BigInt: the definition of Kafka's varint and varlong. */
function referenceVarLong(value: bigint, bits: 32 | 64): Buffer {
  const width = BigInt(bits);
  let zigzag = BigInt.asUintN(bits, (value << 1n) ^ (value >> (width - 1n)));
  const bytes: number[] = [];
  while (zigzag >= 0x80n) {
    bytes.push(Number(zigzag & 0x7fn) | 0x80);
    zigzag >>= 7n;
  }
  bytes.push(Number(zigzag));
  return Buffer.from(bytes);
}

const EDGES = [0, 1, -1, 63, -64, 64, -65, 127, 128, 8_191, -8_192, 2 ** 20, -(2 ** 20), 2 ** 31 - 1, -(2 ** 31)];

describe("patched kafkajs", () => {
  it("writes varints and varlongs as Kafka defines them, in place", () => {
    for (const value of EDGES) {
      expect(new Encoder().writeVarInt(value).buffer).toEqual(referenceVarLong(BigInt(value), 32));
      expect(new Encoder().writeVarLong(value).buffer).toEqual(referenceVarLong(BigInt(value), 64));
      expect(Encoder.sizeOfVarLong(value)).toBe(referenceVarLong(BigInt(value), 64).length);
    }
    // Past 31 bits the Long path still runs (and sizes) as before.
    for (const value of [2 ** 31, -(2 ** 31) - 1, 2 ** 40, -(2 ** 45), Number.MAX_SAFE_INTEGER]) {
      expect(new Encoder().writeVarLong(value).buffer).toEqual(referenceVarLong(BigInt(value), 64));
      expect(Encoder.sizeOfVarLong(value)).toBe(referenceVarLong(BigInt(value), 64).length);
    }
    expect(new Encoder().writeVarLong("-300").buffer).toEqual(referenceVarLong(-300n, 64));
    // Many in a row: the buffer grows under them without losing a byte.
    const many = new Encoder();
    for (let i = 0; i < 2_000; i++) many.writeVarInt(i * 7_919 - 5_000_000);
    expect(many.buffer).toEqual(
      Buffer.concat(Array.from({ length: 2_000 }, (_, i) => referenceVarLong(BigInt(i * 7_919 - 5_000_000), 32))),
    );
  });

  it("writes a record's headers into the record as unpatched kafkajs framed them", () => {
    const key = Buffer.from("session-7");
    const value = randomBytes(700);
    const headers = { ce_id: "event-7", ce_type: Buffer.from("prefixguard.test"), empty: "", pg: ["a", "b"] };
    const record = Record({ offsetDelta: 3, timestampDelta: 12, key, value, headers }) as EncoderInstance;
    // Unpatched: every header an encoder of its own, copied into the record's after the rest.
    const headerList = [
      { key: "ce_id", value: "event-7" },
      { key: "ce_type", value: headers.ce_type },
      { key: "empty", value: "" },
      { key: "pg", value: "a" },
      { key: "pg", value: "b" },
    ];
    const body = new Encoder()
      .writeInt8(0)
      .writeVarLong(12)
      .writeVarInt(3)
      .writeVarIntBytes(key)
      .writeVarIntBytes(value)
      .writeVarIntArray(headerList.map(Header)).buffer;
    expect(record.buffer).toEqual(Buffer.concat([referenceVarLong(BigInt(body.length), 32), body]));
  });

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
