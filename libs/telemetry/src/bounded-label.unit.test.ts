import { describe, expect, it } from "vitest";
import { BoundedLabelValues, OTHER_LABEL_VALUE } from "./bounded-label";

describe("BoundedLabelValues", () => {
  it("keeps the first max values by name and counts every later one as (other)", () => {
    const labels = new BoundedLabelValues(2);
    expect(["/ws/a", "/ws/b", "/ws/c", "/ws/a", "/ws/d", "/ws/b"].map((v) => labels.valueOf(v))).toEqual([
      "/ws/a",
      "/ws/b",
      OTHER_LABEL_VALUE,
      "/ws/a",
      OTHER_LABEL_VALUE,
      "/ws/b",
    ]);
  });

  it("never yields more than max + 1 distinct values", () => {
    const labels = new BoundedLabelValues(10);
    const seen = new Set(Array.from({ length: 1_000 }, (_, i) => labels.valueOf(`/ws/${i}`)));
    expect(seen.size).toBe(11);
  });

  it("with 0 counts everything as (other), and refuses a negative cap", () => {
    expect(new BoundedLabelValues(0).valueOf("/ws/a")).toBe(OTHER_LABEL_VALUE);
    expect(() => new BoundedLabelValues(-1)).toThrow(/max/);
  });
});
