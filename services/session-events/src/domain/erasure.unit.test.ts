import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { describe, expect, it } from "vitest";
import { retentionCutoffMs, withoutContent } from "./erasure";

const CANARY = "CANARY-erasure-unit";
const sealed = { keyId: "k1", nonce: Buffer.alloc(12, 1), ciphertext: Buffer.from(CANARY) };
const envelope = (payload: SessionEvent["payload"]): SessionEvent => ({
  eventId: "e1",
  sessionId: "s1",
  seq: 3,
  occurredAtMs: 1_700_000_000_000,
  schemaVersion: 2,
  type: "x",
  payload,
});
const shown = (event: SessionEvent | undefined) =>
  JSON.stringify(event, (_k, v) => (v instanceof Uint8Array ? [...v] : v));

describe("withoutContent", () => {
  it("empties a message's parts and drops its seal, keeping ids, role, counts and date", () => {
    const event = envelope({
      $case: "messageSaved",
      value: {
        messageId: "m1",
        role: Role.ROLE_USER,
        content: [{ part: { $case: "text", value: { text: CANARY } } }],
        thinkingChars: 7,
        localDate: "2026-10-13",
        sealed,
      },
    });
    const stripped = withoutContent(event);
    expect(stripped?.payload).toEqual({
      $case: "messageSaved",
      value: { messageId: "m1", role: Role.ROLE_USER, content: [], thinkingChars: 7, localDate: "2026-10-13" },
    });
    expect({ ...stripped, payload: undefined }).toEqual({ ...event, payload: undefined });
    expect(shown(stripped)).not.toContain(CANARY);
  });

  it("empties a compaction's summary and a creation's inherited summary, sealed or plaintext (schema 1)", () => {
    const compaction = withoutContent(
      envelope({ $case: "compactionCommitted", value: { generation: 2, boundaryMessageId: "m9", summary: CANARY } }),
    );
    expect(compaction?.payload).toEqual({
      $case: "compactionCommitted",
      value: { generation: 2, boundaryMessageId: "m9", summary: "" },
    });
    const created = withoutContent(
      envelope({
        $case: "sessionCreated",
        value: {
          owner: "u1",
          workspace: "/w",
          timezone: "Asia/Shanghai",
          kind: SessionKind.SESSION_KIND_MAIN,
          parentSessionId: "",
          inheritedSummaryFrom: "s0",
          inheritedSummary: "",
          locale: "en",
          scope: "",
          sealed,
        },
      }),
    );
    expect(created?.payload?.$case === "sessionCreated" && created.payload.value).toMatchObject({
      inheritedSummaryFrom: "s0",
      inheritedSummary: "",
      owner: "u1",
    });
    expect(shown(created)).not.toContain(CANARY);
    expect(shown(compaction)).not.toContain(CANARY);
  });

  it("leaves events without content alone (no rewrite)", () => {
    expect(withoutContent(envelope({ $case: "sessionDeleted", value: {} }))).toBeUndefined();
    expect(withoutContent(envelope({ $case: "messageDeleted", value: { messageId: "m1" } }))).toBeUndefined();
    expect(
      withoutContent(
        envelope({ $case: "compactionCommitted", value: { generation: 1, boundaryMessageId: "m", summary: "" } }),
      ),
    ).toBeUndefined();
  });

  it("drops fields this version does not know, where a newer writer may have put content", () => {
    const unknown = { 99: [new TextEncoder().encode(CANARY)] };
    const stripped = withoutContent({
      ...envelope({ $case: "messageDeleted", value: { messageId: "m1", _unknownFields: unknown } }),
      _unknownFields: unknown,
    });
    expect(stripped).toBeDefined();
    expect(shown(stripped)).not.toContain("99");
    expect(stripped?.payload).toEqual({ $case: "messageDeleted", value: { messageId: "m1" } });
  });
});

describe("retentionCutoffMs", () => {
  it("is off at 0 days and counts fractional days in milliseconds", () => {
    expect(retentionCutoffMs(1_000_000_000, 0)).toBeUndefined();
    expect(retentionCutoffMs(1_000_000_000, 1)).toBe(1_000_000_000 - 86_400_000);
    expect(retentionCutoffMs(1_000_000_000, 0.5)).toBe(1_000_000_000 - 43_200_000);
  });
});
