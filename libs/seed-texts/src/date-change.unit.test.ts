import { createHash } from "node:crypto";
import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { dateChangeNoticeText, formatDateWithWeekday, isLocalDate, requireLocalDate } from "./index";

describe("<date-change> notice", () => {
  // The exact bytes prompt-assembly wrote before the text moved here (seed 000 §5.3): a session
  // running across the move must see no changed byte, or every running session's prefix breaks once.
  it("is seed 000's text, byte for byte, in both locales", () => {
    expect(dateChangeNoticeText("2026-10-13", "zh-CN")).toBe(
      "<date-change>系统提示:当前日期已变更为 2026-10-13(星期二)。这是系统注入的提示,不是用户说的话;需要精确到时分秒请用 shell 执行 date。</date-change>",
    );
    expect(dateChangeNoticeText("2026-12-05", "en")).toBe(
      "<date-change>System notice: the current date has changed to 2026-12-05 (Saturday). This notice was injected by the system; the user did not write it. For the exact time, run date in the shell.</date-change>",
    );
    // sha256 of what texts.ts wrote for 2026-10-13 before the move, taken from that version.
    const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
    expect(sha256(dateChangeNoticeText("2026-10-13", "zh-CN"))).toBe(
      "a1904e517318e4b0020762c483652ebf48b4e2f7ea529b4696f6431b784ad793",
    );
    expect(sha256(dateChangeNoticeText("2026-10-13", "en"))).toBe(
      "cb6d4bc586b847c79b05528f75d5544eea64246e1f959c40338fd30dfb6737dd",
    );
  });

  it("formats the date with its weekday as the tag writes it", () => {
    expect(formatDateWithWeekday("2026-10-12", "zh-CN")).toBe("2026-10-12(星期一)");
    expect(formatDateWithWeekday("2024-02-29", "en")).toBe("2024-02-29 (Thursday)");
  });

  it("refuses a date that is not a real YYYY-MM-DD day", () => {
    expect(isLocalDate("2026-02-29")).toBe(false);
    expect(() => requireLocalDate("date", "2026-13-01")).toThrow(ValidationError);
    expect(() => dateChangeNoticeText("12/05/2026", "en")).toThrow(ValidationError);
  });
});
