import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { DEFAULT_VOLATILE_PATTERNS_SETTING, dateStatedIn, parseVolatilePatterns } from "./volatile-patterns";

const [datePattern] = parseVolatilePatterns(DEFAULT_VOLATILE_PATTERNS_SETTING);
const matches = (text: string) => [...text.matchAll(datePattern?.regex ?? /$^/g)].map((match) => match[0]);

describe("the shipped date pattern", () => {
  it("matches ISO dates and the toDateString / `date` long form", () => {
    expect(matches("Today's date is 2026-12-04.")).toEqual(["2026-12-04"]);
    expect(matches("now: 2026-12-04T10:31:00Z")).toEqual(["2026-12-04"]);
    expect(matches("Today's date: Fri Dec 04 2026")).toEqual(["Fri Dec 04 2026"]);
    expect(matches("Mon Dec  4 2026 and Tue Dec 5 2026")).toEqual(["Mon Dec  4 2026", "Tue Dec 5 2026"]);
  });

  it("does not match inside longer digit runs or other forms", () => {
    expect(matches("id 12026-12-041 v1.2.3 12/04/2026 December 4, 2026")).toEqual([]);
  });

  it("reads the date a span states", () => {
    expect(dateStatedIn("2026-12-04")).toBe("2026-12-04");
    expect(dateStatedIn("Mon Dec  4 2026")).toBe("2026-12-04");
    expect(dateStatedIn("Thu Feb 29 2024")).toBe("2024-02-29");
    expect(dateStatedIn("2026-02-30")).toBeNull();
    expect(dateStatedIn("10:31")).toBeNull();
  });
});

describe("GATEWAY_VOLATILE_PATTERNS", () => {
  it("takes regular expressions and the @date shorthand; [] turns the rule off", () => {
    const patterns = parseVolatilePatterns(String.raw`["@date", "\\d{2}:\\d{2}"]`);
    expect(patterns.map((pattern) => pattern.name)).toEqual(["@date", String.raw`\d{2}:\d{2}`]);
    expect(parseVolatilePatterns("[]")).toEqual([]);
  });

  it("refuses what is not a list of usable patterns, naming the entry", () => {
    for (const bad of ["@date", "{}", '["("]', '["a*"]', '[""]', "[1]"]) {
      expect(() => parseVolatilePatterns(bad)).toThrow(ValidationError);
    }
    expect(() => parseVolatilePatterns('["@date","("]')).toThrow(/GATEWAY_VOLATILE_PATTERNS\[1\]/);
  });
});
