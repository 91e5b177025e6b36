import { describe, expect, it } from "vitest";
import {
  evolveSessionView,
  type ProjectedEvent,
  type ProjectedSessionView,
  planProjectionStep,
} from "./session-projection";

const SESSION = "tomb-1";

function event(seq: number, payload: ProjectedEvent["payload"]): ProjectedEvent {
  return { sessionId: SESSION, seq, occurredAtMs: 1_000 + seq, payload };
}

/** A session with an inherited summary, a message and a committed compaction summary. */
function compactedView(): ProjectedSessionView {
  const steps: ProjectedEvent[] = [
    event(1, {
      type: "sessionCreated",
      kind: "main",
      timezone: "Asia/Shanghai",
      inheritedSummary: "上次聊到压测",
      workspace: "/w",
      locale: "zh-CN",
      owner: "u1",
      scope: "",
    }),
    event(2, {
      type: "messageSaved",
      messageId: "m2",
      role: "user",
      content: [{ type: "text", text: "压测重试" }],
      localDate: "2026-10-12",
    }),
    event(3, { type: "compactionCommitted", generation: 1, boundaryMessageId: "m2", summary: "用户在压测重试逻辑" }),
  ];
  let view: ProjectedSessionView | null = null;
  for (const step of steps) {
    view = evolveSessionView(view, SESSION, planProjectionStep(view, step));
  }
  if (view === null) throw new Error("no view");
  return view;
}

describe("the tombstone of a removed session (no content after erasure)", () => {
  it.each([
    ["SessionDeleted", { type: "sessionDeleted" } as const, { deleted: true, ended: false }],
    ["SideTaskPromoted", { type: "sideTaskPromoted" } as const, { deleted: false, ended: true }],
  ])("%s keeps ids and counters but neither messages nor summary", (_name, payload, flags) => {
    const before = compactedView();
    expect(before.summary).toBe("用户在压测重试逻辑");
    const step = planProjectionStep(before, event(4, payload));
    expect(step.kind).toBe("dropMessages");
    expect(step.session).toMatchObject({ ...flags, summary: null, generation: 1, boundaryMessageId: "m2", lastSeq: 4 });
    const after = evolveSessionView(before, SESSION, step);
    expect(after.messages).toEqual([]);
    expect(after.summary).toBeNull();
  });

  it("a later event on the tombstone brings no summary back", () => {
    const deleted = evolveSessionView(
      compactedView(),
      SESSION,
      planProjectionStep(compactedView(), event(4, { type: "sessionDeleted" })),
    );
    const late = planProjectionStep(
      deleted,
      event(5, { type: "compactionCommitted", generation: 2, boundaryMessageId: "m2", summary: "迟到的摘要" }),
    );
    expect(late.session.summary).toBeNull();
  });
});
