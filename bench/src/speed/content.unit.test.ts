import { describe, expect, it } from "vitest";
import { turnTexts } from "./content";

describe("speed bench conversation text", () => {
  it("is deterministic, 60–300 characters, and partly Chinese", () => {
    expect(turnTexts(7, 3)).toEqual(turnTexts(7, 3));
    let chinese = 0;
    for (let turn = 0; turn < 300; turn++) {
      const { user, assistant } = turnTexts(1, turn);
      for (const text of [user, assistant]) {
        expect(text.length).toBeGreaterThanOrEqual(60);
        expect(text.length).toBeLessThanOrEqual(300);
        if (/[\u4e00-\u9fff]/.test(text)) chinese++;
      }
    }
    expect(chinese).toBeGreaterThan(100);
    expect(chinese).toBeLessThan(500);
  });
});
