// What sealing costs per event (docs/decisions/crypto-shredding.md). Seals and opens a 2 KiB
// message (the content of one MessageSaved) with the session's data key, many times, and prints
// nanoseconds per seal and per open, next to the cost of only encoding the same content (what
// schema 1 did). A measurement to read, not a test: run with `node --import tsx
// bench/src/seal-cost.ts`.

import { newDataKey, openFields, sealFields } from "@prefix-guard/events";
import { SealedFields } from "@prefix-guard/proto/events/v1/session_events";

const MESSAGE_BYTES = 2 * 1024;
const WARMUP = 2_000;
const ROUNDS = 5;
const PER_ROUND = 20_000;

const key = newDataKey();
const sessionId = "bench-session-0001";
// Mixed text: ASCII and CJK, as the sessions carry.
const body = "用户的消息 user message 0123456789 ".repeat(200);
const textOf = (bytes: number) => {
  let out = "";
  for (const ch of body) {
    if (Buffer.byteLength(out + ch) > bytes) break;
    out += ch;
  }
  return out;
};
const content = [{ part: { $case: "text" as const, value: { text: textOf(MESSAGE_BYTES) } } }];

function nsPer(run: (i: number) => unknown): number {
  for (let i = 0; i < WARMUP; i++) run(i);
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < PER_ROUND; i++) run(i);
    rounds.push(Number(process.hrtime.bigint() - start) / PER_ROUND);
  }
  // The median round: one garbage collection in a round does not decide the figure.
  return rounds.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)] ?? Number.NaN;
}

const sealed = Array.from({ length: 1_000 }, (_, seq) => sealFields(key, sessionId, seq + 1, { content }));
const encodeNs = nsPer(() => SealedFields.encode(SealedFields.fromPartial({ content })).finish());
const sealNs = nsPer((i) => sealFields(key, sessionId, i + 1, { content }));
const openNs = nsPer((i) => {
  const seq = (i % sealed.length) + 1;
  const seal = sealed[seq - 1];
  if (seal === undefined) throw new Error(`no seal for seq ${seq}`);
  return openFields(key, sessionId, seq, seal);
});
const overhead = (sealed[0]?.ciphertext.length ?? 0) + (sealed[0]?.nonce.length ?? 0) + key.keyId.length;

process.stdout.write(
  `${JSON.stringify(
    {
      message_bytes: Buffer.byteLength(textOf(MESSAGE_BYTES)),
      encode_only_ns: Math.round(encodeNs),
      seal_ns: Math.round(sealNs),
      open_ns: Math.round(openNs),
      seal_extra_ns: Math.round(sealNs - encodeNs),
      sealed_bytes: overhead,
      node: process.version,
    },
    null,
    2,
  )}\n`,
);
