import { createHash } from "node:crypto";
import { AlreadyExistsError, ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { checkRetryOf, usageIdentityOf } from "./usage-identity";
import type { UsageInput } from "./validation";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
const usage: UsageInput = {
  requestId: "req-1",
  model: "claude-sonnet-4-5",
  promptTokens: 1_000,
  cachedTokens: 900,
  completionTokens: 20,
  cacheCreationTokens: 0,
  provider: "anthropic",
  calledAtMs: 0,
};
const noKey = { idempotencyKey: "", providerResponseId: "" };

describe("usageIdentityOf", () => {
  it("keys a record by request id and provider response id when the harness sends no key", () => {
    const identity = usageIdentityOf("s1", usage, { ...noKey, providerResponseId: "msg_01" }, sha256);
    expect(identity.idempotencyKey).toBe("req-1:msg_01");
    // Other counts under the same response id: same key, other content (a reused key, not a retry).
    const other = usageIdentityOf(
      "s1",
      { ...usage, completionTokens: 21 },
      { ...noKey, providerResponseId: "msg_01" },
      sha256,
    );
    expect(other.idempotencyKey).toBe(identity.idempotencyKey);
    expect(other.eventId).toBe(identity.eventId);
    expect(other.contentSha256).not.toBe(identity.contentSha256);
  });

  it("prefers the harness's own key, scoped to the session", () => {
    const a = usageIdentityOf("s1", usage, { idempotencyKey: "call-7", providerResponseId: "msg_01" }, sha256);
    expect(a.idempotencyKey).toBe("call-7");
    expect(usageIdentityOf("s2", usage, { idempotencyKey: "call-7", providerResponseId: "" }, sha256).eventId).not.toBe(
      a.eventId,
    );
  });

  it("falls back to the content, with the event id records had before keys existed", () => {
    const identity = usageIdentityOf("s1", usage, noKey, sha256);
    expect(identity.eventId).toBe(`rpc-${identity.contentSha256.slice(0, 40)}`);
    expect(identity.idempotencyKey).toBe(`content:${identity.contentSha256.slice(0, 40)}`);
    // Another call that sent the same body: another record.
    expect(usageIdentityOf("s1", { ...usage, calledAtMs: 5 }, noKey, sha256).eventId).not.toBe(identity.eventId);
  });

  it("refuses a key or response id that is not an identifier, naming the field", () => {
    for (const [field, input] of [
      ["idempotency_key", { ...noKey, idempotencyKey: "two words" }],
      ["idempotency_key", { ...noKey, idempotencyKey: "k".repeat(201) }],
      ["provider_response_id", { ...noKey, providerResponseId: "-starts-with-dash" }],
    ] as const) {
      let error: unknown;
      try {
        usageIdentityOf("s1", usage, input, sha256);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe(field);
    }
  });
});

describe("checkRetryOf", () => {
  const identity = usageIdentityOf("s1", usage, { ...noKey, providerResponseId: "msg_01" }, sha256);
  it("accepts the same content and rows stored before keys existed", () => {
    expect(() => checkRetryOf(identity, identity.contentSha256)).not.toThrow();
    expect(() => checkRetryOf(identity, null)).not.toThrow();
  });
  it("refuses other content under the key as ALREADY_EXISTS naming idempotency_key", () => {
    expect(() => checkRetryOf(identity, "0".repeat(64))).toThrow(AlreadyExistsError);
    try {
      checkRetryOf(identity, "0".repeat(64));
    } catch (error) {
      expect((error as AlreadyExistsError).context.field).toBe("idempotency_key");
      expect((error as AlreadyExistsError).reason).toBe("idempotency_key_reused");
    }
  });
});
