import { FailedPreconditionError, ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { deepFreeze, sessionView, stored, text } from "../../test/stored-messages";
import { applyDateChangeNotices, firstUserSeq, previousUserDateBefore, resolveAnchorDate } from "./date-anchor";
import {
  assertCheckpointThresholdBelowBudget,
  attachSummary,
  buildHistoryWindow,
  CHECKPOINT_FRACTION,
  checkpointThresholdChars,
  contentChars,
  DEFAULT_CONTEXT_WINDOW,
  historyBudgetChars,
  IMAGE_PART_CHARS,
  messageCapChars,
  planCompaction,
  SUMMARY_MESSAGE_ID,
  type WindowMessage,
} from "./history-window";
import type { ContentPart, Locale, SessionView, StoredMessage } from "./model";
import { omissionMarkerText, sessionSummaryText } from "./texts";

const user = (seq: number, body: string, extra: { deleted?: boolean; localDate?: string } = {}) =>
  stored(seq, "user", [text(body)], extra);
const assistant = (seq: number, body: string) => stored(seq, "assistant", [text(body)]);

function session(messages: readonly StoredMessage[], overrides: Partial<SessionView> = {}): SessionView {
  return deepFreeze(sessionView(messages, overrides));
}

/** `turns` question/answer pairs of `chars` characters each. */
function conversation(turns: number, chars: number, startSeq = 1): StoredMessage[] {
  const messages: StoredMessage[] = [];
  for (let i = 0; i < turns; i += 1) {
    messages.push(user(startSeq + 2 * i, `${i}`.padEnd(chars, "q")));
    messages.push(assistant(startSeq + 2 * i + 1, `${i}`.padEnd(chars, "a")));
  }
  return messages;
}

function windowChars(messages: readonly WindowMessage[]): number {
  return messages.reduce((sum, m) => sum + contentChars(m.content), 0);
}

const zh: { contextWindow: number | null; locale: Locale } = {
  contextWindow: null,
  locale: "zh-CN",
};

describe("historyBudgetChars and the checkpoint threshold (seed 002 §2.2, §5.2)", () => {
  it.each([
    { window: 200_000, budget: 40_000 },
    { window: 128_000, budget: 40_000 },
    { window: 64_000, budget: 6_000 },
    { window: 32_000, budget: 4_000 },
    { window: null, budget: 40_000 },
  ])("window $window → budget $budget, threshold below it", ({ window, budget }) => {
    expect(historyBudgetChars(window)).toBe(budget);
    expect(checkpointThresholdChars(window)).toBeLessThan(historyBudgetChars(window));
    expect(() => assertCheckpointThresholdBelowBudget(window)).not.toThrow();
  });

  it("keeps the 128 k threshold at 16,000 as before, and null means the 128 k default", () => {
    expect(DEFAULT_CONTEXT_WINDOW).toBe(128_000);
    expect(checkpointThresholdChars(128_000)).toBe(16_000);
    expect(checkpointThresholdChars(null)).toBe(checkpointThresholdChars(DEFAULT_CONTEXT_WINDOW));
    expect(CHECKPOINT_FRACTION).toBeLessThan(1);
  });

  it("holds threshold < budget across every window from 1 to 2,000,000", () => {
    for (let window = 1; window <= 2_000_000; window += 997) {
      if (!(checkpointThresholdChars(window) < historyBudgetChars(window))) throw new Error(`broken at ${window}`);
    }
  });

  it("follows clamp((w − 60,000) × 1.5) between the limits", () => {
    expect(historyBudgetChars(70_000)).toBe(15_000);
    expect(historyBudgetChars(70_001)).toBe(15_001);
    expect(historyBudgetChars(86_667)).toBe(40_000);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])("rejects context window %s", (window) => {
    expect(() => historyBudgetChars(window)).toThrow(ValidationError);
    try {
      historyBudgetChars(window);
    } catch (error) {
      expect((error as ValidationError).field).toBe("context_window");
    }
    expect(() =>
      buildHistoryWindow(session([]), {
        contextWindow: window,
        locale: "en",
      }),
    ).toThrow(ValidationError);
  });
});

describe("buildHistoryWindow: what counts as history", () => {
  it("takes non-deleted, non-system messages after the boundary, in seq order", () => {
    const messages = [
      user(1, "old"),
      assistant(2, "old answer"),
      user(3, "new"),
      stored(4, "system", [text("harness note")]),
      user(5, "deleted", { deleted: true }),
      assistant(6, "new answer"),
    ];
    const result = buildHistoryWindow(session(messages, { boundaryMessageId: "m2", summary: "s" }), zh);
    expect(result.messages.map((m) => m.messageId)).toEqual(["m3", "m6"]);
    expect(result.messages[0]).toEqual({
      role: "user",
      content: [text("new")],
      messageId: "m3",
      seq: 3,
      localDate: "2026-10-12",
    });
    expect(result.stats.keptMessages).toBe(2);
  });

  it("takes everything when there is no boundary, even if the array is out of order", () => {
    const result = buildHistoryWindow(session([assistant(2, "b"), user(1, "a")]), zh);
    expect(result.messages.map((m) => m.seq)).toEqual([1, 2]);
  });

  it("a deleted boundary message still marks the boundary", () => {
    const messages = [user(1, "a"), assistant(2, "b"), user(3, "c", { deleted: true }), user(4, "d")];
    const result = buildHistoryWindow(session(messages, { boundaryMessageId: "m3", summary: "s" }), zh);
    expect(result.messages.map((m) => m.seq)).toEqual([4]);
  });

  it("fails loudly when the boundary message is not in the session", () => {
    expect(() => buildHistoryWindow(session([user(1, "a")], { boundaryMessageId: "nope" }), zh)).toThrow(
      FailedPreconditionError,
    );
  });

  it("is empty with no summary slot for an empty session", () => {
    const result = buildHistoryWindow(session([]), zh);
    expect(result.messages).toEqual([]);
    expect(result.summaryText).toBeNull();
    expect(result.stats.droppedTurns).toBe(0);
    expect(result.checkpointDue).toBe(false);
  });
});

describe("buildHistoryWindow: counting characters", () => {
  it("counts text, tool-call arguments, tool-result text and a fixed amount per image", () => {
    const content: ContentPart[] = [
      text("12345"),
      {
        type: "tool_call",
        callId: "c1",
        name: "shell",
        argumentsJson: '{"cmd":"ls"}',
      },
      { type: "tool_result", callId: "c1", text: "abc", isError: false },
      {
        type: "image",
        mediaType: "image/png",
        url: `data:image/png;base64,${"A".repeat(50_000)}`,
      },
    ];
    expect(contentChars(content)).toBe(5 + '{"cmd":"ls"}'.length + 3 + IMAGE_PART_CHARS);
    const result = buildHistoryWindow(session([stored(1, "user", content)]), zh);
    expect(result.stats.tailChars).toBe(contentChars(content));
    expect(result.stats.clippedMessages).toBe(0);
  });

  it("tailChars is the unclipped post-boundary total before dropping, and drives checkpointDue", () => {
    const threshold = checkpointThresholdChars(64_000); // 2,400
    const under = buildHistoryWindow(session(conversation(2, 500)), {
      contextWindow: 64_000,
      locale: "zh-CN",
    });
    expect(under.stats.tailChars).toBe(2_000);
    expect(under.checkpointDue).toBe(false);

    const over = buildHistoryWindow(session(conversation(6, 500)), {
      contextWindow: 64_000,
      locale: "zh-CN",
    });
    expect(over.stats.tailChars).toBe(6_000);
    expect(over.stats.tailChars).toBeGreaterThan(threshold);
    expect(over.checkpointDue).toBe(true);
    expect(over.stats.checkpointThresholdChars).toBe(threshold);
    expect(over.stats.budgetChars).toBe(6_000);
  });

  it("only counts history after the boundary toward the checkpoint", () => {
    const messages = [...conversation(10, 1_000), ...conversation(1, 100, 21)];
    const result = buildHistoryWindow(session(messages, { boundaryMessageId: "m20", summary: "s" }), zh);
    expect(result.stats.tailChars).toBe(200);
    expect(result.checkpointDue).toBe(false);
  });
});

describe("buildHistoryWindow: clipping one over-long message", () => {
  it("keeps the head up to the cap and appends the omission marker with the exact count", () => {
    const cap = messageCapChars(historyBudgetChars(32_000)); // 2,000
    const long = "甲".repeat(5_000);
    const result = buildHistoryWindow(session([user(1, long), assistant(2, "ok")]), {
      contextWindow: 32_000,
      locale: "zh-CN",
    });
    const part = result.messages[0]?.content[0];
    expect(part).toEqual(text("甲".repeat(cap) + omissionMarkerText(5_000 - cap, "zh-CN")));
    expect(part?.type === "text" && part.text.endsWith("……（以下省略 3000 字）")).toBe(true);
    expect(result.messages[1]?.content).toEqual([text("ok")]);
    expect(result.stats.clippedMessages).toBe(1);
    expect(result.stats.tailChars).toBe(5_002);
    expect(result.checkpointDue).toBe(true);
  });

  it("never cuts tool-call arguments and never splits a surrogate pair", () => {
    const cap = messageCapChars(historyBudgetChars(32_000));
    const args = JSON.stringify({ path: "a".repeat(600) });
    const content: ContentPart[] = [
      { type: "tool_call", callId: "c1", name: "read", argumentsJson: args },
      text(`${"b".repeat(cap - args.length - 1)}😀${"c".repeat(500)}`),
    ];
    const result = buildHistoryWindow(session([stored(1, "assistant", content), user(2, "next")]), {
      contextWindow: 32_000,
      locale: "en",
    });
    const [call, clipped] = result.messages[0]?.content ?? [];
    expect(call).toEqual(content[0]);
    expect(clipped?.type).toBe("text");
    const body = clipped?.type === "text" ? clipped.text : "";
    expect(body.startsWith("b".repeat(cap - args.length - 1) + omissionMarkerText(502, "en"))).toBe(true);
    expect(/[\ud800-\udbff](?![\udc00-\udfff])/.test(body)).toBe(false);
  });

  it("clips tool results too, and marks later text parts once the allowance is spent", () => {
    const cap = messageCapChars(historyBudgetChars(32_000));
    const content: ContentPart[] = [
      {
        type: "tool_result",
        callId: "c1",
        text: "r".repeat(cap + 10),
        isError: false,
      },
      text("tail"),
    ];
    const result = buildHistoryWindow(session([user(1, "go"), stored(2, "tool", content)]), {
      contextWindow: 32_000,
      locale: "en",
    });
    expect(result.messages[1]?.content).toEqual([
      {
        type: "tool_result",
        callId: "c1",
        text: "r".repeat(cap) + omissionMarkerText(10, "en"),
        isError: false,
      },
      text(omissionMarkerText(4, "en")),
    ]);
    expect(result.stats.clippedMessages).toBe(1);
  });

  it("does not touch the stored messages", () => {
    const messages = [user(1, "x".repeat(9_000)), assistant(2, "y")];
    const snapshot = structuredClone(messages);
    const view = session(messages);
    buildHistoryWindow(view, { contextWindow: 32_000, locale: "zh-CN" });
    expect(view.messages).toEqual(snapshot);
  });
});

describe("buildHistoryWindow: dropping whole turns", () => {
  it("drops the oldest whole turns until the window fits the budget", () => {
    // 64 k → budget 6,000; ten turns of 1,000 chars: the last six fit exactly.
    const result = buildHistoryWindow(session(conversation(10, 500)), {
      contextWindow: 64_000,
      locale: "zh-CN",
    });
    expect(result.stats.droppedTurns).toBe(4);
    expect(result.messages.map((m) => m.seq)).toEqual([9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    expect(result.messages[0]?.role).toBe("user");
    expect(windowChars(result.messages)).toBeLessThanOrEqual(result.stats.budgetChars);
    expect(result.stats.keptMessages).toBe(12);
  });

  it("a turn runs from a user message to the next one, tool messages included", () => {
    const messages = [
      user(1, "u".repeat(1_900)),
      stored(2, "assistant", [{ type: "tool_call", callId: "c", name: "t", argumentsJson: "{}" }]),
      stored(3, "tool", [
        {
          type: "tool_result",
          callId: "c",
          text: "r".repeat(1_900),
          isError: false,
        },
      ]),
      assistant(4, "a".repeat(100)),
      user(5, "v".repeat(1_000)),
      assistant(6, "w".repeat(1_000)),
    ];
    const result = buildHistoryWindow(session(messages), {
      contextWindow: 32_000,
      locale: "en",
    });
    expect(result.stats.droppedTurns).toBe(1);
    expect(result.messages.map((m) => m.seq)).toEqual([5, 6]);
  });

  it("leading non-user messages belong to the first turn and go with it", () => {
    const messages = [assistant(1, "hello, I am the agent"), ...conversation(4, 1_000, 2)];
    const result = buildHistoryWindow(session(messages), {
      contextWindow: 32_000,
      locale: "en",
    });
    expect(result.messages[0]?.role).toBe("user");
    expect(result.messages.some((m) => m.seq === 1)).toBe(false);
    // 21 + 4 × 2,000 chars against 4,000: the first turn carries the greeting, so two turns go.
    expect(result.stats.droppedTurns).toBe(2);
    expect(result.messages.map((m) => m.seq)).toEqual([6, 7, 8, 9]);
  });

  it("always keeps the last turn, even over budget", () => {
    const messages = [
      user(1, "first"),
      user(2, "x".repeat(1_990)),
      stored(3, "tool", [
        {
          type: "tool_result",
          callId: "c",
          text: "y".repeat(1_990),
          isError: false,
        },
      ]),
      assistant(4, "z".repeat(1_990)),
    ];
    const result = buildHistoryWindow(session(messages), {
      contextWindow: 32_000,
      locale: "en",
    });
    expect(result.messages.map((m) => m.seq)).toEqual([2, 3, 4]);
    expect(result.stats.droppedTurns).toBe(1);
    expect(windowChars(result.messages)).toBeGreaterThan(result.stats.budgetChars);
  });
});

describe("buildHistoryWindow: the summary slot (seed 002 §5.1)", () => {
  function announcedCount(summaryText: string | null): number | null {
    const match = summaryText?.match(/更早的 (\d+) 轮|其后的 (\d+) 轮|(\d+) earlier turn|the (\d+) turns? after/);
    if (!match) return null;
    return Number(match[1] ?? match[2] ?? match[3] ?? match[4]);
  }

  it("after an inherited summary, announces exactly droppedTurns as not summarised", () => {
    const view = session(conversation(10, 500), {
      summary: "  用户在排查缓存。  ",
    });
    const result = buildHistoryWindow(view, {
      contextWindow: 64_000,
      locale: "zh-CN",
    });
    expect(result.stats.droppedTurns).toBeGreaterThan(0);
    expect(result.stats.summarisedTurns).toBe(0);
    expect(announcedCount(result.summaryText)).toBe(result.stats.droppedTurns);
    expect(result.summaryText?.startsWith(sessionSummaryText("用户在排查缓存。", "zh-CN"))).toBe(true);
    expect(result.summaryText).toContain("上面的会话摘要来自之前的会话");
    expect(result.summaryText).not.toContain("已并入");
  });

  it("after a compaction, says how many turns the summary covers and how many dropped ones it does not", () => {
    // 5 turns compacted (boundary on the 5th turn's reply), then 20 turns that overflow a 32k window.
    const before = conversation(5, 100);
    const after = conversation(20, 800, before.length + 1);
    const boundary = before.at(-1)?.messageId ?? "";
    for (const locale of ["zh-CN", "en"] as const) {
      const result = buildHistoryWindow(
        session([...before, ...after], { summary: "前五轮讨论了压测。", boundaryMessageId: boundary, generation: 1 }),
        { contextWindow: 32_000, locale },
      );
      expect(result.stats.summarisedTurns).toBe(5);
      expect(result.stats.droppedTurns).toBeGreaterThan(0);
      expect(announcedCount(result.summaryText)).toBe(result.stats.droppedTurns);
      expect(result.summaryText).toContain(
        locale === "zh-CN" ? "涵盖本会话最早的 5 轮对话" : "covers the first 5 turns",
      );
      expect(result.summaryText).not.toMatch(/已并入|been merged/);
      expect(result.summaryText).toMatch(/没有并入摘要|NOT been summarised/);
    }
  });

  it("says honestly that dropped turns were NOT summarised when there is no summary", () => {
    for (const locale of ["zh-CN", "en"] as const) {
      const result = buildHistoryWindow(session(conversation(10, 500)), {
        contextWindow: 64_000,
        locale,
      });
      expect(announcedCount(result.summaryText)).toBe(result.stats.droppedTurns);
      expect(result.summaryText).not.toMatch(/已并入|merged/);
      expect(result.summaryText).not.toContain("<session-summary>");
    }
    const en = buildHistoryWindow(session(conversation(10, 500)), {
      contextWindow: 64_000,
      locale: "en",
    });
    expect(en.summaryText).toContain("NOT been summarised");
  });

  it("adds no announcement when nothing was dropped", () => {
    const withSummary = buildHistoryWindow(session(conversation(2, 100), { summary: "earlier work" }), zh);
    expect(withSummary.stats.droppedTurns).toBe(0);
    expect(withSummary.summaryText).toBe(sessionSummaryText("earlier work", "zh-CN"));
    expect(announcedCount(withSummary.summaryText)).toBeNull();

    const withoutSummary = buildHistoryWindow(session(conversation(2, 100)), zh);
    expect(withoutSummary.summaryText).toBeNull();
    expect(buildHistoryWindow(session(conversation(2, 100), { summary: "   " }), zh).summaryText).toBeNull();
  });
});

describe("attachSummary: the summary slot at the head of the window", () => {
  const window = (): WindowMessage[] =>
    deepFreeze([
      {
        role: "user",
        content: [text("q1")],
        messageId: "m1",
        seq: 1,
        localDate: "2026-10-12",
      },
      {
        role: "assistant",
        content: [text("a1")],
        messageId: "m2",
        seq: 2,
        localDate: "2026-10-12",
      },
    ]);

  it("is a new leading text part of the first message when that is a user message", () => {
    const input = window();
    const result = attachSummary(input, "SUMMARY", "zh-CN");
    expect(result[0]?.content).toEqual([text("SUMMARY"), text("q1")]);
    expect(result[0]?.messageId).toBe("m1");
    expect(result[1]).toBe(input[1]);
    expect(input[0]?.content).toEqual([text("q1")]);
  });

  it("is a synthetic leading user message, outside the date chain, when the window starts otherwise", () => {
    const input = window().slice(1);
    const result = attachSummary(input, "SUMMARY", "en");
    expect(result).toHaveLength(2);
    expect(result[0]).toEqual({
      role: "user",
      content: [text("SUMMARY")],
      messageId: SUMMARY_MESSAGE_ID,
      seq: -1,
      localDate: "",
    });
    expect(result[1]).toBe(input[0]);
    expect(attachSummary([], "SUMMARY", "en")).toHaveLength(1);
    const noticed = applyDateChangeNotices(result, "2026-10-01", null, "en");
    expect(noticed.noticeDates).toEqual([]);
    expect(noticed.messages[0]).toBe(result[0]);
  });

  it("returns a copy without changes when there is nothing to attach", () => {
    const input = window();
    const result = attachSummary(input, null, "en");
    expect(result).toEqual(input);
    expect(result).not.toBe(input);
  });
});

describe("append-only: one more same-day turn under budget leaves the earlier messages byte-identical", () => {
  const earlier = [
    user(1, "first question"),
    assistant(2, "first answer"),
    user(3, "second"),
    assistant(4, "second answer"),
  ];
  const later = [...earlier, user(5, "third"), assistant(6, "third answer")];

  it("holds for the window itself", () => {
    const before = buildHistoryWindow(session(earlier), zh);
    const after = buildHistoryWindow(session(later), zh);
    expect(after.stats.droppedTurns).toBe(0);
    expect(after.messages.slice(0, before.messages.length)).toEqual(before.messages);
    expect(JSON.stringify(after.messages.slice(0, before.messages.length))).toBe(JSON.stringify(before.messages));
  });

  it("holds for the full history pipeline with a summary and a date change in it", () => {
    const compacted = [
      user(1, "pre-boundary", { localDate: "2026-10-11" }),
      assistant(2, "pre-boundary answer"),
      user(3, "after compaction", { localDate: "2026-10-12" }),
      assistant(4, "ok"),
    ];
    const grown = [...compacted, user(5, "same day again", { localDate: "2026-10-12" }), assistant(6, "ok again")];
    function pipeline(messages: StoredMessage[]) {
      const view = session(messages, {
        boundaryMessageId: "m2",
        summary: "done: step 1",
      });
      const window = buildHistoryWindow(view, zh);
      const anchor = resolveAnchorDate(view.messages, "2026-10-12");
      const previous = previousUserDateBefore(view.messages, firstUserSeq(window.messages));
      const noticed = applyDateChangeNotices(window.messages, anchor, previous, "zh-CN");
      return attachSummary(noticed.messages, window.summaryText, "zh-CN");
    }
    const before = pipeline(compacted);
    const after = pipeline(grown);
    expect(before[0]?.content).toHaveLength(3); // summary, <date-change> for 10-12, the user text
    expect(JSON.stringify(after.slice(0, before.length))).toBe(JSON.stringify(before));
    expect(after).toHaveLength(before.length + 2);
  });
});

describe("planCompaction", () => {
  it("covers everything up to the newest message, or stops before the newest turns kept", () => {
    const messages = conversation(4, 10);
    expect(planCompaction(session(messages), 0)).toEqual({
      boundaryMessageId: messages.at(-1)?.messageId,
      turnsToSummarise: 4,
    });
    expect(planCompaction(session(messages), 1)).toEqual({
      boundaryMessageId: messages[5]?.messageId,
      turnsToSummarise: 3,
    });
  });

  it("counts the turns an earlier summary already covers, and skips deleted and system messages", () => {
    const messages = [...conversation(2, 10), ...conversation(2, 10, 5)];
    const boundary = messages[3]?.messageId ?? null;
    const deletedLast = messages.map((message, index) =>
      index === messages.length - 1 ? { ...message, deleted: true } : message,
    );
    const plan = planCompaction(session(deletedLast, { boundaryMessageId: boundary, summary: "s", generation: 1 }), 0);
    expect(plan).toEqual({ boundaryMessageId: messages[6]?.messageId, turnsToSummarise: 4 });
  });

  it("refuses when nothing after the current boundary would be covered", () => {
    const messages = conversation(2, 10);
    const compacted = session(messages, { boundaryMessageId: messages.at(-1)?.messageId ?? null, summary: "s" });
    expect(() => planCompaction(compacted, 0)).toThrow(expect.objectContaining({ reason: "nothing_to_compact" }));
    expect(() => planCompaction(session(messages), 2)).toThrow(
      expect.objectContaining({ reason: "nothing_to_compact" }),
    );
  });
});
