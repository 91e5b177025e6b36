// Crypto-shredding of session content: each session has its own AES-256-GCM data key, and every
// content field an event carries is sealed with it. Destroying the key erases every copy of the
// content at once (topics, DLQs, subscribers' stores, backups) without rewriting any of them.

import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from "node:crypto";
import { ValidationError } from "@prefix-guard/errors";
import { type SealedContent, SealedFields, type SessionEvent } from "@prefix-guard/proto/events/v1/session_events";

export const DATA_KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export interface DataKey {
  readonly keyId: string;
  readonly key: Uint8Array;
}

/** A new random data key for a new session. */
export function newDataKey(): DataKey {
  return { keyId: randomUUID(), key: randomBytes(DATA_KEY_BYTES) };
}

/** Binds a seal to its event: moved to another session or seq, it no longer opens. */
export function sealedAad(sessionId: string, seq: number): Buffer {
  return Buffer.from(`prefixguard.sealed.v1\n${sessionId}\n${seq}`, "utf8");
}

export function sealFields(
  dataKey: DataKey,
  sessionId: string,
  seq: number,
  fields: Partial<SealedFields>,
): SealedContent {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", dataKey.key, nonce);
  cipher.setAAD(sealedAad(sessionId, seq));
  const plaintext = SealedFields.encode(SealedFields.fromPartial(fields)).finish();
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return { keyId: dataKey.keyId, nonce, ciphertext };
}

/**
 * The sealed fields, or a ValidationError (reason `sealed_content_unreadable`) when the key is not
 * this seal's or the bytes were changed: never a crash, and the caller decides (skip, or DLQ).
 */
export function openFields(dataKey: DataKey, sessionId: string, seq: number, sealed: SealedContent): SealedFields {
  const unreadable = (why: string) =>
    new ValidationError("sealed", `sealed content of ${sessionId} seq ${seq} cannot be opened: ${why}`, {
      reason: "sealed_content_unreadable",
    });
  if (sealed.keyId !== dataKey.keyId) throw unreadable("sealed under another key");
  if (dataKey.key.length !== DATA_KEY_BYTES) throw unreadable("the key is not 32 bytes");
  if (sealed.nonce.length !== NONCE_BYTES || sealed.ciphertext.length < TAG_BYTES) throw unreadable("malformed");
  try {
    const decipher = createDecipheriv("aes-256-gcm", dataKey.key, sealed.nonce);
    decipher.setAAD(sealedAad(sessionId, seq));
    decipher.setAuthTag(sealed.ciphertext.subarray(sealed.ciphertext.length - TAG_BYTES));
    const plaintext = Buffer.concat([
      decipher.update(sealed.ciphertext.subarray(0, sealed.ciphertext.length - TAG_BYTES)),
      decipher.final(),
    ]);
    return SealedFields.decode(plaintext);
  } catch {
    throw unreadable("authentication failed");
  }
}

/** The seal an event carries, if its payload is one that holds content. */
export function sealedContentOf(event: SessionEvent): SealedContent | undefined {
  const payload = event.payload;
  switch (payload?.$case) {
    case "sessionCreated":
    case "messageSaved":
    case "compactionCommitted":
      return payload.value.sealed;
    default:
      return undefined;
  }
}

/**
 * The event with the sealed fields moved into its plaintext ones and `sealed` cleared; with no key
 * (the session was erased) the plaintext fields are emptied instead.
 *
 * @throws ValidationError (sealed_content_unreadable) when the key does not open the seal.
 */
export function withOpenedContent(event: SessionEvent, key: DataKey | null): SessionEvent {
  const payload = event.payload;
  const sealed = sealedContentOf(event);
  if (payload === undefined || sealed === undefined) return event;
  const fields = key === null ? null : openFields(key, event.sessionId, event.seq, sealed);
  switch (payload.$case) {
    case "sessionCreated":
      return {
        ...event,
        payload: {
          $case: "sessionCreated",
          value: { ...payload.value, inheritedSummary: fields?.inheritedSummary ?? "", sealed: undefined },
        },
      };
    case "messageSaved":
      return {
        ...event,
        payload: {
          $case: "messageSaved",
          value: { ...payload.value, content: fields?.content ?? [], sealed: undefined },
        },
      };
    case "compactionCommitted":
      return {
        ...event,
        payload: {
          $case: "compactionCommitted",
          value: { ...payload.value, summary: fields?.summary ?? "", sealed: undefined },
        },
      };
    default:
      return event;
  }
}
