import { type ContentPart, Role } from "@prefix-guard/proto/common/v1/common";
import { describe, expect, it } from "vitest";
import { SUMMARY_MAX_CHARS } from "./limits";
import { extractPersonalTerms, SCRUB_MARKER, scrubSummary } from "./summary-scrub";
import { codePointLength } from "./text";

const text = (value: string): ContentPart => ({ part: { $case: "text", value: { text: value } } });
const user = (value: string) => ({ role: Role.ROLE_USER, content: [text(value)] });

describe("scrubSummary", () => {
  const cases: [string, string, string[]][] = [
    // [summary, a fragment that must disappear, fragments that must stay]
    ["联系邮箱 zhang.san+a@example.com.cn，下次再聊", "zhang.san+a@example.com.cn", ["联系邮箱", "下次再聊"]],
    ["手机 13812345678 可用", "13812345678", ["手机", "可用"]],
    ["手机 138-1234-5678 可用", "138-1234-5678", ["可用"]],
    ["电话 +86 138 1234 5678", "1234 5678", ["电话"]],
    ["call +44 20 7946 0958 tomorrow", "7946", ["call", "tomorrow"]],
    ["座机 010-12345678", "12345678", ["座机"]],
    ["用户 1990-05-12 出生", "1990-05-12", ["用户", "出生"]],
    ["生日是1990年5月12日", "1990年5月12日", ["生日是"]],
    ["日期 1990/5/12 提到", "1990/5/12", ["提到"]],
    ["born on May 12, 1990 in spring", "May 12, 1990", ["in spring"]],
    ["出生时间 14:30，想问事业", "14:30", ["想问事业"]],
    ["1990年5月12日下午两点出生", "两点", []],
    ["他说自己是子时出生的", "子时", ["出生"]],
    ["She was born at 2pm.", "2pm", ["She was born at"]],
    ["会议定在 14:30 开始", "", ["14:30"]],
    ["用户出生于四川成都的一个小镇", "四川成都", ["的一个小镇"]],
    ["用户名叫李雷，关心工作", "李雷", ["关心工作"]],
    ["The user was born in New York City and works remotely", "New York", ["works remotely"]],
  ];

  for (const [summary, gone, kept] of cases) {
    it(`scrubs ${JSON.stringify(summary)}`, () => {
      const scrubbed = scrubSummary(summary, []);
      if (gone.length > 0) expect(scrubbed).not.toContain(gone);
      for (const fragment of kept) expect(scrubbed).toContain(fragment);
      if (gone.length > 0) expect(scrubbed).toContain(SCRUB_MARKER);
    });
  }

  it("keeps a time that is not about birth", () => {
    expect(scrubSummary("会议定在 14:30 开始", [])).toBe("会议定在 14:30 开始");
  });

  it("removes each personal term, Latin ones only as whole words", () => {
    const scrubbed = scrubSummary("Ann asked about her annual plan; 张三想换工作，张三很焦虑", ["Ann", "张三"]);
    expect(scrubbed).toBe(
      `${SCRUB_MARKER} asked about her annual plan; ${SCRUB_MARKER}想换工作，${SCRUB_MARKER}很焦虑`,
    );
  });

  it("collapses adjacent markers", () => {
    expect(scrubSummary("出生 1990-05-12 14:30", [])).toBe(`出生 ${SCRUB_MARKER}`);
  });

  it("caps at SUMMARY_MAX_CHARS code points without half a marker or half an emoji", () => {
    const long = scrubSummary("😀".repeat(SUMMARY_MAX_CHARS + 50), []);
    expect(codePointLength(long)).toBe(SUMMARY_MAX_CHARS);
    expect(long.endsWith("😀")).toBe(true);
    const cutInMarker = scrubSummary(`${"字".repeat(SUMMARY_MAX_CHARS - 2)} a@b.co 后面`, []);
    expect(cutInMarker).toBe(`${"字".repeat(SUMMARY_MAX_CHARS - 2)} `);
  });
});

describe("extractPersonalTerms", () => {
  it("finds names and places the user stated, cut at function words", () => {
    const terms = extractPersonalTerms([
      user("你好，我叫张三今年30岁。"),
      user("我出生在成都的一个小镇，现在我住在上海浦东。姓名：王小明"),
      user("出生地：哈尔滨"),
    ]);
    expect(terms).toEqual(["张三", "成都", "上海浦东", "王小明", "哈尔滨"]);
  });

  it("finds English self statements, multi-word capitalized names and skips function words and months", () => {
    const terms = extractPersonalTerms([
      user("Hi, my name is Mary Jane Watson and I was born in Kuala Lumpur."),
      user("I live in a small town. I was born in May. Birthplace: Lyon"),
    ]);
    expect(terms).toEqual(["Mary Jane Watson", "Kuala Lumpur", "Lyon"]);
  });

  it("ignores assistant, tool and system messages", () => {
    expect(
      extractPersonalTerms([
        { role: Role.ROLE_ASSISTANT, content: [text("我叫小助手")] },
        { role: Role.ROLE_SYSTEM, content: [text("my name is System")] },
        {
          role: Role.ROLE_TOOL,
          content: [{ part: { $case: "toolResult", value: { callId: "c", text: "我叫工具", isError: false } } }],
        },
      ]),
    ).toEqual([]);
  });

  it("drops runs longer than 20 characters", () => {
    expect(extractPersonalTerms([user(`我住在${"长".repeat(25)}`)])).toEqual([]);
  });

  it("feeds scrubSummary so the summary loses what the user said about themselves", () => {
    const terms = extractPersonalTerms([user("我叫欧阳娜娜，出生于哈尔滨")]);
    const scrubbed = scrubSummary("欧阳娜娜关心事业；她在哈尔滨长大", terms);
    expect(scrubbed).not.toContain("欧阳娜娜");
    expect(scrubbed).not.toContain("哈尔滨");
    expect(scrubbed).toContain("关心事业");
  });
});
