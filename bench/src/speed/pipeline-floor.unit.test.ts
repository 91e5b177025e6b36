import { newDataKey, sealFields } from "@prefix-guard/events";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import type { SaveMessageRequest } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { describe, expect, it } from "vitest";
import { turnTexts } from "./content";
import { floorEvent, latestSeqs } from "./pipeline-floor";

const request = (sessionId: string, text: string): SaveMessageRequest => ({
  sessionId,
  role: Role.ROLE_USER,
  content: [{ part: { $case: "text", value: { text } } }],
  thinkingText: "",
});
const ids = () => "0190d7a0-0000-7000-8000-000000000001";

describe("the event pipeline's floor", () => {
  it("writes events byte for byte the size of the MessageSaved session-events writes for the same message", () => {
    for (const turn of [0, 1, 7]) {
      const saved = request("after-ev-12", turnTexts(77, turn).user);
      const occurredAtMs = Date.UTC(2026, 11, 4, 12);
      const floor = floorEvent(saved, 42, occurredAtMs, ids);
      // What session-events encodes: the content sealed with the session's data key.
      const real = SessionEvent.encode({
        eventId: ids(),
        sessionId: saved.sessionId,
        seq: 42,
        occurredAtMs,
        schemaVersion: 2,
        type: "MessageSaved",
        payload: {
          $case: "messageSaved",
          value: {
            messageId: ids(),
            role: saved.role,
            content: [],
            thinkingChars: 0,
            localDate: "2026-12-04",
            sealed: sealFields(newDataKey(), saved.sessionId, 42, { content: saved.content }),
          },
        },
      }).finish();
      expect(floor.byteLength).toBe(real.byteLength);
    }
  });

  it("decodes every record and keeps the highest seq of each session", () => {
    const at = Date.UTC(2026, 0, 1);
    const records = [
      floorEvent(request("a", "z"), 2, at, ids),
      floorEvent(request("b", "y"), 1, at, ids),
      // Redelivered after a later one: the row must not move back.
      floorEvent(request("a", "x"), 1, at, ids),
    ];
    expect(latestSeqs(records)).toEqual(
      new Map([
        ["a", 2],
        ["b", 1],
      ]),
    );
    expect(() => latestSeqs([new Uint8Array([1, 2, 3])])).toThrow();
  });
});
