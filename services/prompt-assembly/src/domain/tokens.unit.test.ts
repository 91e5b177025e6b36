import { describe, expect, it } from "vitest";
import { estimateTokens } from "./tokens";

describe("estimateTokens", () => {
  it.each([
    ["", 0],
    ["abcd", 1],
    ["abcde", 2],
    ["你好", 2],
    ["工作区规则", 5],
    ["ＡＢＣ", 3],
    ["ひらがなカタカナ", 8],
    ["한국어", 3],
    ["「你好」", 4],
  ])("estimates %j as %i tokens", (text, tokens) => {
    expect(estimateTokens(text)).toBe(tokens);
  });

  it("adds wide characters to the rounded-up rest", () => {
    // 2 wide + 5 narrow ("abc" and two spaces) → 2 + ceil(5 / 4).
    expect(estimateTokens("你 abc 好")).toBe(4);
  });

  it("counts an astral character once, not per UTF-16 unit", () => {
    expect(estimateTokens("😀😀😀😀")).toBe(1);
    expect(estimateTokens("𠀀")).toBe(1);
  });

  it("grows with the text and is deterministic", () => {
    const text = "prefix changed session=811 ".repeat(100);
    expect(estimateTokens(text)).toBe(Math.ceil(text.length / 4));
    expect(estimateTokens(text + text)).toBeGreaterThan(estimateTokens(text));
  });
});
