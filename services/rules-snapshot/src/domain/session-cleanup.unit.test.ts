import { describe, expect, it } from "vitest";
import { planSessionEventCleanup } from "./session-cleanup";
import { rulesEventType } from "./snapshot-events";

describe("planSessionEventCleanup", () => {
  it("drops snapshots older than a committed compaction", () => {
    const cleanup = planSessionEventCleanup({
      sessionId: "811",
      payload: { $case: "compactionCommitted", value: { generation: 3, boundaryMessageId: "m9", summary: "s" } },
    });
    expect(cleanup).toEqual({
      belowGeneration: 3,
      logLine: "workspace rules snapshot invalidated session=811 reason=compaction-committed",
      event: { $case: "invalidated", value: { reason: "compaction-committed", generation: 3 } },
    });
  });

  it("deletes the row of a deleted session and of a promoted side session", () => {
    expect(planSessionEventCleanup({ sessionId: "811", payload: { $case: "sessionDeleted", value: {} } })).toEqual({
      belowGeneration: null,
      logLine: "workspace rules snapshot deleted session=811 reason=session-deleted",
      event: { $case: "deleted", value: { reason: "session-deleted" } },
    });
    expect(
      planSessionEventCleanup({
        sessionId: "side-7",
        payload: { $case: "sideTaskPromoted", value: { parentSessionId: "811" } },
      }),
    ).toMatchObject({
      belowGeneration: null,
      event: { $case: "deleted", value: { reason: "side-task-promoted" } },
    });
  });

  it("ignores events that do not concern snapshots", () => {
    expect(
      planSessionEventCleanup({ sessionId: "811", payload: { $case: "messageDeleted", value: { messageId: "m1" } } }),
    ).toBeNull();
    expect(planSessionEventCleanup({ sessionId: "811", payload: undefined })).toBeNull();
  });

  it("names event types after their payload message", () => {
    expect(rulesEventType({ $case: "retainedEmpty", value: { pinnedHash: "h" } })).toBe("RulesRetainedEmpty");
    expect(
      rulesEventType({
        $case: "pinned",
        value: {
          workspace: "",
          rulesHash: "",
          chars: 0,
          sourcePath: "",
          sourceMtimeMs: 0,
          generation: 0,
          reason: "first",
        },
      }),
    ).toBe("RulesPinned");
  });
});
