import { describe, expect, it } from "vitest";
import { RememberedSectionTexts } from "./rules";

describe("RememberedSectionTexts", () => {
  it("gives back the last text remembered for a session", () => {
    const texts = new RememberedSectionTexts(1_024);
    texts.remember("s1", "rules v1");
    texts.remember("s1", "rules v2");
    expect(texts.guess("s1")).toBe("rules v2");
    expect(texts.guess("s2")).toBeUndefined();
    expect(texts.stats().sessions).toBe(1);
  });

  it("stays within its byte budget, least recently remembered first out", () => {
    const text = "x".repeat(100);
    const texts = new RememberedSectionTexts(3 * ((2 + text.length) * 2 + 64));
    for (const session of ["s1", "s2", "s3", "s4"]) texts.remember(session, text);
    expect(texts.guess("s1")).toBeUndefined();
    expect(["s2", "s3", "s4"].map((s) => texts.guess(s))).toEqual([text, text, text]);
    expect(texts.stats().bytes).toBeLessThanOrEqual(3 * ((2 + text.length) * 2 + 64));
  });

  it("remembers nothing with a budget of 0 or a text larger than the budget", () => {
    const off = new RememberedSectionTexts(0);
    off.remember("s1", "rules");
    expect(off.guess("s1")).toBeUndefined();
    const small = new RememberedSectionTexts(100);
    small.remember("s1", "y".repeat(100));
    expect(small.guess("s1")).toBeUndefined();
    expect(small.stats()).toEqual({ sessions: 0, bytes: 0 });
  });

  it("forgets a session", () => {
    const texts = new RememberedSectionTexts(1_024);
    texts.remember("s1", "rules");
    texts.forget("s1");
    expect(texts.guess("s1")).toBeUndefined();
    expect(texts.stats()).toEqual({ sessions: 0, bytes: 0 });
  });
});
