import { describe, expect, it } from "vitest";
import { formatDuration, parseDuration } from "./duration";

describe("parseDuration", () => {
  it("reads minutes, hours and days", () => {
    expect(parseDuration("30m")).toBe(30 * 60_000);
    expect(parseDuration("24h")).toBe(24 * 3_600_000);
    expect(parseDuration("7d")).toBe(7 * 86_400_000);
    expect(parseDuration("45s")).toBe(45_000);
  });

  it("rejects bare numbers, zero, signs, fractions, unknown units and junk", () => {
    for (const text of ["24", "0h", "-1h", "+1h", "1.5h", "", "h", "5x", "1h30m", "24 h", "1w"]) {
      expect(parseDuration(text), text).toBeUndefined();
    }
  });

  it("accepts only the units it is asked for", () => {
    expect(parseDuration("500ms")).toBeUndefined();
    expect(parseDuration("500ms", ["ms", "s"])).toBe(500);
    expect(parseDuration("2d", ["ms", "s", "m"])).toBeUndefined();
  });

  it("rejects amounts whose milliseconds are not exact integers", () => {
    expect(parseDuration(`${Number.MAX_SAFE_INTEGER}d`)).toBeUndefined();
  });
});

describe("formatDuration", () => {
  it("uses the largest exact unit", () => {
    expect(formatDuration(86_400_000)).toBe("1d");
    expect(formatDuration(36 * 3_600_000)).toBe("36h");
    expect(formatDuration(90_000)).toBe("90s");
    expect(formatDuration(1_500)).toBe("1500ms");
  });

  it("round-trips what parseDuration reads", () => {
    for (const text of ["30m", "36h", "7d", "45s"]) expect(formatDuration(parseDuration(text) ?? 0)).toBe(text);
  });
});
