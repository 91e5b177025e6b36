// rules-snapshot reads session.events.v1 only for the event type (cleanup on compaction, deletion,
// promotion): schema 2 events, whose content is sealed, must decode and clean up like
// schema 1 ones, with no key ever needed.

import { decodeSessionEvent, encodeSessionEvent, newDataKey, sealFields } from "@prefix-guard/events";
import { Role } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { describe, expect, it } from "vitest";
import { planSessionEventCleanup } from "../domain/session-cleanup";

const key = newDataKey();

function event(schemaVersion: number, seq: number, payload: NonNullable<SessionEvent["payload"]>, type: string) {
  return encodeSessionEvent({
    eventId: `e-${seq}`,
    sessionId: "811",
    seq,
    occurredAtMs: 1_760_284_200_000 + seq,
    schemaVersion,
    type,
    payload,
  });
}

const sealedCompaction = (schemaVersion: number) =>
  event(
    schemaVersion,
    3,
    {
      $case: "compactionCommitted",
      value: {
        generation: 2,
        boundaryMessageId: "m-2",
        summary: "",
        sealed: sealFields(key, "811", 3, { summary: "用户在压测重试逻辑" }),
      },
    },
    "CompactionCommitted",
  );

describe("rules-snapshot's session event decoding across schema versions", () => {
  it("decodes a schema 2 sealed CompactionCommitted and cleans up below its generation", () => {
    const decoded = decodeSessionEvent(sealedCompaction(2));
    expect(decoded.schemaVersion).toBe(2);
    expect(planSessionEventCleanup(decoded)).toMatchObject({ belowGeneration: 2 });
  });

  it("decodes schema 2 MessageSaved and SessionDeleted (ignored, and a full cleanup)", () => {
    const saved = decodeSessionEvent(
      event(
        2,
        2,
        {
          $case: "messageSaved",
          value: {
            messageId: "m-2",
            role: Role.ROLE_USER,
            content: [],
            thinkingChars: 0,
            localDate: "2026-10-12",
            sealed: sealFields(key, "811", 2, { content: [{ part: { $case: "text", value: { text: "压测" } } }] }),
          },
        },
        "MessageSaved",
      ),
    );
    expect(planSessionEventCleanup(saved)).toBeNull();
    const deleted = decodeSessionEvent(event(2, 4, { $case: "sessionDeleted", value: {} }, "SessionDeleted"));
    expect(planSessionEventCleanup(deleted)).toMatchObject({ belowGeneration: null });
  });

  it("still decodes schema 1 and refuses versions it does not know", () => {
    expect(decodeSessionEvent(sealedCompaction(1)).schemaVersion).toBe(1);
    expect(() => decodeSessionEvent(sealedCompaction(3))).toThrow(/unsupported schema version 3/);
  });
});
