import { ValidationError } from "@prefix-guard/errors";
import { Role } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { describe, expect, it } from "vitest";
import { decodeSessionEvent, encodeSessionEvent, newEventId } from "./index";

const saved = (): SessionEvent => ({
  eventId: newEventId(1_700_000_000_000),
  sessionId: "811",
  seq: 7,
  occurredAtMs: 1_760_284_200_000,
  schemaVersion: 1,
  type: "MessageSaved",
  payload: {
    $case: "messageSaved",
    value: {
      messageId: "m7",
      role: Role.ROLE_USER,
      content: [{ part: { $case: "text", value: { text: "你好" } } }],
      thinkingChars: 0,
      localDate: "2026-10-12",
    },
  },
});

describe("session event envelope", () => {
  it("round-trips through protobuf bytes", () => {
    const event = saved();
    const decoded = decodeSessionEvent(encodeSessionEvent(event));
    expect(decoded.sessionId).toBe("811");
    expect(decoded.seq).toBe(7);
    expect(decoded.payload.$case).toBe("messageSaved");
    if (decoded.payload.$case !== "messageSaved") throw new Error("unreachable");
    expect(decoded.payload.value.content[0]?.part).toEqual({
      $case: "text",
      value: expect.objectContaining({ text: "你好" }),
    });
  });

  it("rejects garbage, unknown versions and mismatched types with a ValidationError", () => {
    expect(() => decodeSessionEvent(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f]))).toThrow(ValidationError);
    expect(() => decodeSessionEvent(encodeSessionEvent({ ...saved(), schemaVersion: 9 }))).toThrow(/schema version 9/);
    expect(() => decodeSessionEvent(encodeSessionEvent({ ...saved(), type: "SessionDeleted" }))).toThrow(
      /does not match/,
    );
    expect(() => decodeSessionEvent(encodeSessionEvent({ ...saved(), seq: 0 }))).toThrow(/seq/);
    expect(() => decodeSessionEvent(encodeSessionEvent({ ...saved(), payload: undefined }))).toThrow(/no payload/);
  });

  it("makes time-ordered, unique v7 ids", () => {
    const a = newEventId(1_000);
    const b = newEventId(2_000);
    expect(a < b).toBe(true);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(newEventId(1_000)).not.toBe(a);
  });

  it("puts the 48-bit milliseconds first and draws a fresh random tail for every id, across pool refills", () => {
    const ms = 1_764_806_400_123;
    const hex = ms.toString(16).padStart(12, "0");
    const ids = Array.from({ length: 2_000 }, () => newEventId(ms));
    for (const id of ids) expect(id.replace(/-/g, "").slice(0, 12)).toBe(hex);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids.map((id) => id.slice(-12))).size).toBe(ids.length);
  });
});
