import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { deepFreeze, sessionView, stored, text } from "../../test/stored-messages";
import {
  applyDateChangeNotices,
  firstUserSeq,
  previousUserDateBefore,
  renderCurrentDateSection,
  resolveAnchorDate,
} from "./date-anchor";
import { attachSummary, buildHistoryWindow, type WindowMessage } from "./history-window";
import type { ContentPart, StoredMessage } from "./model";
import { dateChangeNoticeText } from "./texts";

function user(
  seq: number,
  localDate: string,
  body = `question ${seq}`,
  extra: { deleted?: boolean; createdAtMs?: number } = {},
) {
  return stored(seq, "user", [text(body)], { ...extra, localDate });
}

function assistant(seq: number, localDate: string) {
  return stored(seq, "assistant", [text(`answer ${seq}`)], { localDate });
}

function windowOf(messages: readonly StoredMessage[]): WindowMessage[] {
  return messages.map((m) => ({
    role: m.role,
    content: m.content,
    messageId: m.messageId,
    seq: m.seq,
    localDate: m.localDate,
  }));
}

function leadingText(message: WindowMessage | undefined): string | undefined {
  const part = message?.content[0];
  return part?.type === "text" ? part.text : undefined;
}

describe("resolveAnchorDate (seed 000 §5.1, §7 锚点)", () => {
  it("is the localDate of the first user message, whatever today is", () => {
    const messages = deepFreeze([assistant(1, "2026-10-01"), user(2, "2026-10-12"), user(3, "2026-10-15")]);
    expect(resolveAnchorDate(messages, "2026-11-30")).toBe("2026-10-12");
  });

  it("uses the lowest seq, not array position", () => {
    const messages = deepFreeze([user(7, "2026-10-14"), user(3, "2026-10-12"), user(5, "2026-10-13")]);
    expect(resolveAnchorDate(messages, "2026-11-30")).toBe("2026-10-12");
  });

  it("falls back to today when the session has no user message", () => {
    expect(resolveAnchorDate([], "2026-10-20")).toBe("2026-10-20");
    expect(resolveAnchorDate(deepFreeze([assistant(1, "2026-10-01")]), "2026-10-20")).toBe("2026-10-20");
  });

  it("self-heals: a deleted first user message hands the anchor to the next one", () => {
    const before = deepFreeze([user(1, "2026-10-12"), assistant(2, "2026-10-12"), user(3, "2026-10-14")]);
    expect(resolveAnchorDate(before, "2026-10-20")).toBe("2026-10-12");
    const after = deepFreeze([
      user(1, "2026-10-12", "q", { deleted: true }),
      assistant(2, "2026-10-12"),
      user(3, "2026-10-14"),
    ]);
    expect(resolveAnchorDate(after, "2026-10-20")).toBe("2026-10-14");
    expect(resolveAnchorDate(deepFreeze([user(1, "2026-10-12", "q", { deleted: true })]), "2026-10-20")).toBe(
      "2026-10-20",
    );
  });

  it("rejects a malformed today", () => {
    expect(() => resolveAnchorDate([], "2026/10/20")).toThrow(ValidationError);
  });
});

describe("renderCurrentDateSection (seed 000 §5.4)", () => {
  it("renders the anchor with weekday and the shell hint only when the session has a shell", () => {
    const section = renderCurrentDateSection("2026-10-12", {
      locale: "zh-CN",
      allowShellClock: true,
    });
    expect(section.startsWith("## 当前日期\n")).toBe(true);
    expect(section).toContain("当前日期:`2026-10-12`(星期一)");
    expect(section).toContain("首条用户消息");
    expect(section).toContain("以标签内日期为准");
    expect(section).toContain("shell 执行 `date`");
    expect(
      renderCurrentDateSection("2026-10-12", {
        locale: "zh-CN",
        allowShellClock: false,
      }),
    ).not.toContain("shell");
    expect(
      renderCurrentDateSection("2026-10-12", {
        locale: "en",
        allowShellClock: true,
      }),
    ).toContain("(Monday)");
  });

  it("rejects an anchor that is not a date", () => {
    expect(() =>
      renderCurrentDateSection("2026-10-12 23:50", {
        locale: "en",
        allowShellClock: true,
      }),
    ).toThrow(ValidationError);
  });
});

describe("previousUserDateBefore (seed 000 §5.2)", () => {
  it("crosses the compaction boundary to the last user message before the window", () => {
    const messages = deepFreeze([
      user(1, "2026-10-12"),
      assistant(2, "2026-10-12"),
      user(3, "2026-10-13"),
      assistant(4, "2026-10-13"),
      user(5, "2026-10-14"),
    ]);
    const window = buildHistoryWindow(sessionView(messages, { boundaryMessageId: "m4", summary: "s" }), {
      contextWindow: null,
      locale: "zh-CN",
    });
    expect(firstUserSeq(window.messages)).toBe(5);
    expect(previousUserDateBefore(messages, firstUserSeq(window.messages))).toBe("2026-10-13");
  });

  it("skips deleted and undated user messages and assistant messages", () => {
    const messages = deepFreeze([
      user(1, "2026-10-12"),
      user(2, "2026-10-13", "gone", { deleted: true }),
      user(3, ""),
      assistant(4, "2026-10-14"),
      user(5, "2026-10-15"),
    ]);
    expect(previousUserDateBefore(messages, 5)).toBe("2026-10-12");
  });

  it("is null when the window has no user message or nothing precedes it", () => {
    const messages = deepFreeze([user(1, "2026-10-12"), assistant(2, "2026-10-12")]);
    expect(previousUserDateBefore(messages, null)).toBeNull();
    expect(previousUserDateBefore(messages, 1)).toBeNull();
    expect(firstUserSeq(windowOf([assistant(2, "2026-10-12")]))).toBeNull();
  });

  it("crosses turns the window dropped for budget", () => {
    // 32 k → budget 4,000 and per-message cap 2,000: three 2,000-char turns leave room for one.
    const big = "x".repeat(2_000);
    const messages = deepFreeze([
      user(1, "2026-10-12", big),
      assistant(2, "2026-10-12"),
      user(3, "2026-10-13", big),
      assistant(4, "2026-10-13"),
      user(5, "2026-10-13", big),
    ]);
    const window = buildHistoryWindow(sessionView(messages), {
      contextWindow: 32_000,
      locale: "zh-CN",
    });
    expect(window.stats.droppedTurns).toBe(2);
    expect(window.messages.map((m) => m.seq)).toEqual([5]);
    const previous = previousUserDateBefore(messages, firstUserSeq(window.messages));
    expect(previous).toBe("2026-10-13");
    const anchor = resolveAnchorDate(messages, "2026-10-13");
    expect(applyDateChangeNotices(window.messages, anchor, previous, "zh-CN").noticeDates).toEqual([]);
  });
});

describe("applyDateChangeNotices (seed 000 §5.3, §7 纯函数)", () => {
  const notice = (date: string) => dateChangeNoticeText(date, "zh-CN");

  it("adds nothing when every user message is on the anchor day", () => {
    const window = deepFreeze(
      windowOf([user(1, "2026-10-12"), assistant(2, "2026-10-12"), user(3, "2026-10-12"), user(4, "2026-10-12")]),
    );
    const result = applyDateChangeNotices(window, "2026-10-12", null, "zh-CN");
    expect(result.noticeDates).toEqual([]);
    expect(result.messages).toEqual(window);
  });

  it("crossing one day tags only the first message of the new day", () => {
    const window = deepFreeze(
      windowOf([
        user(1, "2026-10-12"),
        assistant(2, "2026-10-12"),
        user(3, "2026-10-13"),
        assistant(4, "2026-10-13"),
        user(5, "2026-10-13"),
      ]),
    );
    const result = applyDateChangeNotices(window, "2026-10-12", null, "zh-CN");
    expect(result.noticeDates).toEqual(["2026-10-13"]);
    expect(result.messages[2]?.content).toEqual([text(notice("2026-10-13")), text("question 3")]);
    expect(result.messages[4]).toEqual(window[4]);
    expect(result.messages[0]).toEqual(window[0]);
  });

  it("a gap of three days gives one tag carrying the new date", () => {
    const window = deepFreeze(windowOf([user(1, "2026-10-12"), user(2, "2026-10-15"), user(3, "2026-10-15")]));
    const result = applyDateChangeNotices(window, "2026-10-12", null, "zh-CN");
    expect(result.noticeDates).toEqual(["2026-10-15"]);
    expect(leadingText(result.messages[1])).toBe(notice("2026-10-15"));
    expect(leadingText(result.messages[1])).toContain("2026-10-15(星期四)");
    expect(result.messages.filter((m) => m.content.length > 1)).toHaveLength(1);
  });

  it("each new day in the window gets its own tag, in order", () => {
    const window = deepFreeze(windowOf([user(1, "2026-10-12"), user(2, "2026-10-13"), user(3, "2026-10-16")]));
    expect(applyDateChangeNotices(window, "2026-10-12", null, "en").noticeDates).toEqual(["2026-10-13", "2026-10-16"]);
  });

  it("the first message on the anchor day gets no tag; a first message after the anchor does", () => {
    const sameDay = deepFreeze(windowOf([user(4, "2026-10-12")]));
    expect(applyDateChangeNotices(sameDay, "2026-10-12", null, "zh-CN").noticeDates).toEqual([]);
    // Anchor from an earlier message outside the window (e.g. before the boundary, no previous date known).
    const later = deepFreeze(windowOf([user(4, "2026-10-14"), user(5, "2026-10-14")]));
    const result = applyDateChangeNotices(later, "2026-10-12", null, "zh-CN");
    expect(result.noticeDates).toEqual(["2026-10-14"]);
    expect(leadingText(result.messages[0])).toBe(notice("2026-10-14"));
  });

  it("compares the first window message with the previous user date, not the anchor, when one is given", () => {
    const window = deepFreeze(windowOf([user(5, "2026-10-14"), user(6, "2026-10-15")]));
    expect(applyDateChangeNotices(window, "2026-10-12", "2026-10-14", "zh-CN").noticeDates).toEqual(["2026-10-15"]);
    expect(applyDateChangeNotices(window, "2026-10-12", "2026-10-13", "zh-CN").noticeDates).toEqual([
      "2026-10-14",
      "2026-10-15",
    ]);
  });

  it("multimodal: the tag is a new leading text part, images keep their order, inputs are untouched", () => {
    const content: ContentPart[] = [
      {
        type: "image",
        mediaType: "image/png",
        url: "https://example.test/a.png",
      },
      text("what is in these?"),
      {
        type: "image",
        mediaType: "image/jpeg",
        url: "https://example.test/b.jpg",
      },
    ];
    const original = windowOf([user(1, "2026-10-12"), stored(2, "user", content, { localDate: "2026-10-13" })]);
    const snapshot = structuredClone(original);
    const window = deepFreeze(original);
    const result = applyDateChangeNotices(window, "2026-10-12", null, "zh-CN");
    expect(result.messages[1]?.content).toEqual([text(notice("2026-10-13")), ...content]);
    expect(result.messages[1]?.content.slice(1)).toEqual(snapshot[1]?.content);
    expect(window).toEqual(snapshot);
    expect(result.messages).not.toBe(window);
    expect(result.messages[1]).not.toBe(window[1]);
    expect(result.messages[1]?.content).not.toBe(window[1]?.content);
  });

  it("skips user messages without a localDate and does not let them move the chain", () => {
    const window = deepFreeze(
      windowOf([user(1, "2026-10-12"), user(2, ""), user(3, "2026-10-12"), user(4, ""), user(5, "2026-10-13")]),
    );
    const result = applyDateChangeNotices(window, "2026-10-12", null, "zh-CN");
    expect(result.noticeDates).toEqual(["2026-10-13"]);
    expect(result.messages[1]).toBe(window[1]);
    expect(result.messages[3]).toBe(window[3]);
    expect(leadingText(result.messages[4])).toBe(notice("2026-10-13"));
  });

  it("never tags assistant or tool messages, whatever their date", () => {
    const window = deepFreeze(
      windowOf([
        user(1, "2026-10-12"),
        assistant(2, "2026-10-13"),
        stored(3, "tool", [text("ok")], { localDate: "2026-10-14" }),
      ]),
    );
    expect(applyDateChangeNotices(window, "2026-10-12", null, "zh-CN").noticeDates).toEqual([]);
  });

  it("is deterministic: the same window renders the same bytes every time", () => {
    const window = deepFreeze(windowOf([user(1, "2026-10-12"), user(2, "2026-10-13"), user(3, "2026-10-20")]));
    const first = JSON.stringify(applyDateChangeNotices(window, "2026-10-12", null, "zh-CN"));
    const second = JSON.stringify(applyDateChangeNotices(window, "2026-10-12", null, "zh-CN"));
    expect(second).toBe(first);
  });
});

describe("seed 000 §10 acceptance 1: first message 10-12 23:50, next message 10-13 08:00", () => {
  const day1 = user(1, "2026-10-12", "帮我看看这个缓存问题", {
    createdAtMs: Date.UTC(2026, 9, 12, 15, 50),
  });
  const reply = assistant(2, "2026-10-12");
  const day2 = user(3, "2026-10-13", "继续", {
    createdAtMs: Date.UTC(2026, 9, 13, 0, 0),
  });
  const options = { contextWindow: null, locale: "zh-CN" } as const;

  function buildRequestParts(messages: readonly StoredMessage[], today: string) {
    const view = deepFreeze(sessionView(messages));
    const anchor = resolveAnchorDate(view.messages, today);
    const section = renderCurrentDateSection(anchor, {
      locale: "zh-CN",
      allowShellClock: true,
    });
    const window = buildHistoryWindow(view, options);
    const previous = previousUserDateBefore(view.messages, firstUserSeq(window.messages));
    const noticed = applyDateChangeNotices(window.messages, anchor, previous, "zh-CN");
    return {
      section,
      messages: attachSummary(noticed.messages, window.summaryText, "zh-CN"),
    };
  }

  it("keeps the section on 2026-10-12 (星期一) and tags the new message with 2026-10-13(星期二)", () => {
    const evening = buildRequestParts([day1, reply], "2026-10-12");
    const morning = buildRequestParts([day1, reply, day2], "2026-10-13");

    expect(morning.section).toContain("`2026-10-12`(星期一)");
    expect(morning.section).toBe(evening.section);

    const tagged = morning.messages[2];
    expect(leadingText(tagged)).toMatch(/^<date-change>.*2026-10-13\(星期二\).*<\/date-change>$/);
    expect(tagged?.content[1]).toEqual(text("继续"));
    expect(morning.messages.slice(0, 2)).toEqual(evening.messages);
  });
});
