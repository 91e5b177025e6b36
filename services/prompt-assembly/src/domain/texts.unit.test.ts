import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import {
  compactionInstructionText,
  currentDateSectionText,
  dateChangeNoticeText,
  droppedTurnsAfterSummaryText,
  droppedTurnsNotSummarisedText,
  formatDateWithWeekday,
  formatWeekday,
  isLocalDate,
  omissionMarkerText,
  sessionSummaryText,
  weekdayIndex,
} from "./texts";

function pad(value: number, width: number): string {
  return String(value).padStart(width, "0");
}

describe("weekday formatting", () => {
  it("names the seed's dates: 2026-10-12 is a Monday, 2026-10-13 a Tuesday", () => {
    expect(formatWeekday("2026-10-12", "zh-CN")).toBe("星期一");
    expect(formatWeekday("2026-10-13", "zh-CN")).toBe("星期二");
    expect(formatWeekday("2026-10-12", "en")).toBe("Monday");
    expect(formatWeekday("2026-10-18", "zh-CN")).toBe("星期日");
    expect(formatDateWithWeekday("2026-10-13", "zh-CN")).toBe("2026-10-13(星期二)");
    expect(formatDateWithWeekday("2026-10-13", "en")).toBe("2026-10-13 (Tuesday)");
  });

  it("agrees with the UTC calendar on every day of 1999–2101 (leap years and century rules)", () => {
    // Date.UTC is only the test's independent oracle; the code under test does pure arithmetic.
    for (let time = Date.UTC(1999, 0, 1); time <= Date.UTC(2101, 11, 31); time += 86_400_000) {
      const date = new Date(time);
      const localDate = `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1, 2)}-${pad(date.getUTCDate(), 2)}`;
      if (weekdayIndex(localDate) !== date.getUTCDay()) {
        throw new Error(`${localDate}: got ${weekdayIndex(localDate)}, want ${date.getUTCDay()}`);
      }
    }
  });

  it("rejects strings that are not real YYYY-MM-DD dates", () => {
    expect(isLocalDate("2024-02-29")).toBe(true);
    for (const bad of ["2026-02-29", "2100-02-29", "2026-13-01", "2026-04-31", "2026-1-1", "", "2026-10-12 23:50:00"]) {
      expect(isLocalDate(bad)).toBe(false);
      expect(() => formatWeekday(bad, "en")).toThrow(ValidationError);
    }
  });
});

describe("current-date section", () => {
  it("keeps the seed 000 §5.4 wording, with the shell hint only when allowed", () => {
    const withShell = currentDateSectionText("2026-10-12", "zh-CN", true);
    expect(withShell.split("\n")).toEqual([
      "## 当前日期",
      "",
      "当前日期:`2026-10-12`(星期一)",
      "本节日期是本会话首条用户消息的日期,会话内固定不变。若你的用户消息前出现 <date-change> 标签,说明真实日期已经推进,以标签内日期为准。如需精确到时分秒的时间,请使用 shell 执行 `date` 命令获取。",
    ]);
    const withoutShell = currentDateSectionText("2026-10-12", "zh-CN", false);
    expect(withoutShell).not.toContain("shell");
    expect(withoutShell).not.toContain("`date`");
    expect(withoutShell).toContain("<date-change>");
  });

  it("has an English equivalent with the same facts", () => {
    const text = currentDateSectionText("2026-10-12", "en", true);
    expect(text.startsWith("## Current date\n\n")).toBe(true);
    expect(text).toContain("`2026-10-12` (Monday)");
    expect(text).toContain("first user message");
    expect(text).toContain("<date-change>");
    expect(text).toContain("`date`");
    expect(currentDateSectionText("2026-10-12", "en", false)).not.toContain("shell");
  });
});

describe("<date-change> notice", () => {
  it("is one line, a tag of its own, and says it is not the user speaking", () => {
    for (const locale of ["zh-CN", "en"] as const) {
      const text = dateChangeNoticeText("2026-10-13", locale);
      expect(text).not.toContain("\n");
      expect(text.startsWith("<date-change>")).toBe(true);
      expect(text.endsWith("</date-change>")).toBe(true);
      expect(text.startsWith("<system-notice>")).toBe(false);
    }
    expect(dateChangeNoticeText("2026-10-13", "zh-CN")).toBe(
      "<date-change>系统提示:当前日期已变更为 2026-10-13(星期二)。这是系统注入的提示,不是用户说的话;需要精确到时分秒请用 shell 执行 date。</date-change>",
    );
    expect(dateChangeNoticeText("2026-10-13", "en")).toContain("2026-10-13 (Tuesday)");
    expect(dateChangeNoticeText("2026-10-13", "en")).toContain("the user did not write it");
  });
});

describe("history texts", () => {
  it("omission marker says what was cut and claims nothing about a summary", () => {
    expect(omissionMarkerText(1234, "zh-CN")).toBe("……（以下省略 1234 字）");
    expect(omissionMarkerText(1234, "en")).toBe("…(1234 more characters omitted)");
    for (const locale of ["zh-CN", "en"] as const) {
      expect(omissionMarkerText(7, locale)).not.toMatch(/摘要|summary/);
    }
  });

  it("dropped-turns announcements carry both exact counts and never call dropped turns summarised", () => {
    expect(droppedTurnsAfterSummaryText(4, 3, "zh-CN")).toBe(
      "（上面的会话摘要涵盖本会话最早的 4 轮对话；其后的 3 轮对话因篇幅限制未带上，也没有并入摘要；如需其中的内容，请让用户重新提供）",
    );
    expect(droppedTurnsAfterSummaryText(0, 2, "zh-CN")).toContain("上面的会话摘要来自之前的会话；其后的 2 轮对话");
    expect(droppedTurnsAfterSummaryText(1, 1, "en")).toBe(
      "(The session summary above covers the first 1 turn of this session; the 1 turn after them was left out for length and has NOT been summarised; if you need what was said there, ask the user to provide it again.)",
    );
    expect(droppedTurnsAfterSummaryText(5, 2, "en")).toContain("covers the first 5 turns");
    expect(droppedTurnsAfterSummaryText(5, 2, "en")).toContain("the 2 turns after them were left out");
    for (const locale of ["zh-CN", "en"] as const) {
      expect(droppedTurnsAfterSummaryText(3, 2, locale)).not.toMatch(/已并入|been merged/);
    }
    expect(droppedTurnsNotSummarisedText(3, "zh-CN")).toContain("3 轮");
    expect(droppedTurnsNotSummarisedText(3, "zh-CN")).toContain("没有并入任何摘要");
    expect(droppedTurnsNotSummarisedText(2, "en")).toContain("2 earlier turns were left out");
    expect(droppedTurnsNotSummarisedText(2, "en")).toContain("NOT been summarised");
  });

  it("summary wrapper keeps the summary text intact and marks it as system-written", () => {
    const zh = sessionSummaryText("用户在排查缓存命中率。", "zh-CN");
    expect(zh).toContain("\n用户在排查缓存命中率。\n");
    expect(zh.startsWith("<session-summary>")).toBe(true);
    expect(zh.endsWith("</session-summary>")).toBe(true);
    expect(sessionSummaryText("x", "en")).toContain("not by the user");
  });
});

describe("compaction instruction", () => {
  it.each(["zh-CN", "en"] as const)(
    "%s: asks for a bounded rolling summary, user words only, no personal data, no notices",
    (locale) => {
      const extending = compactionInstructionText(locale, true);
      const fresh = compactionInstructionText(locale, false);
      for (const text of [extending, fresh]) {
        expect(text.startsWith("<compaction-request>")).toBe(true);
        expect(text).toContain("800");
        expect(text).toContain("<date-change>");
        expect(text).toMatch(
          locale === "zh-CN"
            ? /姓名.*出生日期.*出生时间.*出生地.*邮箱.*电话/
            : /name.*date of birth.*time of birth.*place of birth.*e-mail.*phone/,
        );
        expect(text).toMatch(locale === "zh-CN" ? /不是用户说的话/ : /not from the user/);
      }
      expect(extending).not.toBe(fresh);
      expect(extending).toMatch(
        locale === "zh-CN" ? /会话摘要基础上延续/ : /Extend and update the session summary above/,
      );
    },
  );
});
