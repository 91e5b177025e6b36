// Which RecordUsage calls are the same record (docs/decisions/usage-identity.md): a retry after a
// lost answer must find the stored row instead of billing the call twice, and a key reused for
// other content must be refused.

import { AlreadyExistsError } from "@prefix-guard/errors";
import { checkId } from "@prefix-guard/events/ids";
import type { UsageInput } from "./validation";

export const MAX_IDEMPOTENCY_KEY_CHARS = 200;
export const MAX_PROVIDER_RESPONSE_ID_CHARS = 200;

/** What names a RecordUsage call, as it arrived. */
export interface UsageIdentityInput {
  readonly idempotencyKey: string;
  readonly providerResponseId: string;
}

export interface UsageIdentity {
  /** The key the record is stored under: the one sent, or the default (see usageIdentityOf). */
  readonly idempotencyKey: string;
  /** "" when the harness sent none. */
  readonly providerResponseId: string;
  /** sha256 of the record's content: tells a retry (same) from a reused key (different). */
  readonly contentSha256: string;
  /** llm.usage.v1 event id of the record; a function of the session and the key, so a retry republishes nothing new. */
  readonly eventId: string;
}

/**
 * The content that makes two records the same call: every field the harness sent, as it sent it
 * (called_at_ms 0 stays 0, so a retry that leaves it to the server is still the same content).
 * A raw usage is named by what it parsed into, so resending it raw or typed is the same record.
 */
function contentOf(sessionId: string, usage: UsageInput | undefined): string {
  const report = usage?.providerReport;
  return JSON.stringify([
    sessionId,
    usage?.requestId,
    usage?.model,
    usage?.promptTokens,
    usage?.cachedTokens,
    usage?.completionTokens,
    usage?.cacheCreationTokens,
    usage?.reportedCost ?? null,
    usage?.provider,
    usage?.calledAtMs,
    // Absent before 1-hour writes existed: a zero keeps the content of older records unchanged.
    ...((usage?.cacheCreation1hTokens ?? 0) > 0 ? [usage?.cacheCreation1hTokens] : []),
    report
      ? [
          report.cacheMissReason,
          report.cacheReadInputTokens,
          report.cacheCreationInputTokens,
          report.openaiCachedTokens,
          report.rawJson,
        ]
      : null,
  ]);
}

/**
 * The record's idempotency key: the harness's own, else `<request_id>:<provider_response_id>` (one
 * provider response is one billed call), else its content — two calls that sent the same body
 * (same request_id) without a response id are told apart by their counts or called_at_ms, as before
 * keys existed. A content key keeps the event id records had before keys, so a retry across the
 * upgrade is still recognised.
 *
 * @param sha256 lower-case hex sha256 of UTF-8 text (injected: the domain does no I/O and picks no library).
 */
export function usageIdentityOf(
  sessionId: string,
  usage: UsageInput | undefined,
  input: UsageIdentityInput,
  sha256: (text: string) => string,
): UsageIdentity {
  const idempotencyKey =
    input.idempotencyKey === "" ? "" : checkId(input.idempotencyKey, "idempotency_key", MAX_IDEMPOTENCY_KEY_CHARS);
  const providerResponseId =
    input.providerResponseId === ""
      ? ""
      : checkId(input.providerResponseId, "provider_response_id", MAX_PROVIDER_RESPONSE_ID_CHARS);
  const contentSha256 = sha256(contentOf(sessionId, usage));
  if (idempotencyKey === "" && providerResponseId === "") {
    const contentKey = contentSha256.slice(0, 40);
    return { idempotencyKey: `content:${contentKey}`, providerResponseId, contentSha256, eventId: `rpc-${contentKey}` };
  }
  const key = idempotencyKey !== "" ? idempotencyKey : `${usage?.requestId ?? ""}:${providerResponseId}`;
  return {
    idempotencyKey: key,
    providerResponseId,
    contentSha256,
    eventId: `rpc-${sha256(JSON.stringify([sessionId, "key", key])).slice(0, 40)}`,
  };
}

/**
 * A stored record found under the same key: the same content is a retry (answer what was stored),
 * other content is a different record reusing the key — refused, since storing it would lose one
 * of the two and answering the stored one would hide the mistake.
 *
 * @param storedContentSha256 null for a row stored before keys existed (its key is its content).
 */
export function checkRetryOf(identity: UsageIdentity, storedContentSha256: string | null): void {
  if (storedContentSha256 === null || storedContentSha256 === identity.contentSha256) return;
  throw new AlreadyExistsError(
    `idempotency_key: ${identity.idempotencyKey} was recorded with other content (a different call reusing the key)`,
    { reason: "idempotency_key_reused", context: { field: "idempotency_key" } },
  );
}
