import { describe, expect, it } from "vitest";
import { countTokenUnits, estimateTokens, WIDE_CHARACTER } from "./tokens";

/** The definition the table must reproduce: the regex tested per code point. */
function estimateByRegex(text: string): number {
  let wide = 0;
  let other = 0;
  for (const character of text) {
    if (WIDE_CHARACTER.test(character)) wide += 1;
    else other += 1;
  }
  return wide + Math.ceil(other / 4);
}

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

  it("agrees with the per-character regex on every code point, lone surrogates included", () => {
    const disagreements: string[] = [];
    for (let code = 0; code <= 0x10ffff; code += 1) {
      // Each code point alone and after a narrow one: both the wide test and the rounding must agree.
      const character = code >= 0xd800 && code <= 0xdfff ? String.fromCharCode(code) : String.fromCodePoint(code);
      if (estimateTokens(character) !== estimateByRegex(character)) disagreements.push(code.toString(16));
      if (disagreements.length > 10) break;
    }
    expect(disagreements).toEqual([]);
  });

  it("agrees with the regex on mixed text with surrogate pairs split at every position", () => {
    const text = "压测 retry 3 次😀𠀀 ｱ한\ud83d tail\ude00 end「」";
    for (let cut = 0; cut <= text.length; cut += 1) {
      expect(estimateTokens(text.slice(0, cut))).toBe(estimateByRegex(text.slice(0, cut)));
      expect(estimateTokens(text.slice(cut))).toBe(estimateByRegex(text.slice(cut)));
    }
  });

  it("counts wide and other units additively over concatenation", () => {
    const parts = ["第1轮：", "retry 😀", "𠀀ok", ""];
    const whole = countTokenUnits(parts.join(""));
    const summed = parts.map(countTokenUnits).reduce((a, b) => ({ wide: a.wide + b.wide, other: a.other + b.other }));
    expect(whole).toEqual(summed);
  });
});
