import { BUILTIN_PROVIDER_CATALOGUE, familyOf } from "@prefix-guard/providers";
import { describe, expect, it } from "vitest";
import { coldCacheAt, formatIdleGap } from "./cold-cache";

const BUILT_AT = Date.UTC(2026, 9, 14, 5, 0, 0);
const minutes = (n: number) => n * 60_000;
const claude = familyOf(BUILTIN_PROVIDER_CATALOGUE, "claude-sonnet-4-6", "anthropic");
const gpt56 = familyOf(BUILTIN_PROVIDER_CATALOGUE, "gpt-5.6", "openai");

describe("coldCacheAt", () => {
  it("is warm up to the retention in force and cold past it", () => {
    const previous = { builtAtMs: BUILT_AT, family: claude, optedRetention: "" };
    expect(coldCacheAt(previous, BUILT_AT + minutes(5))).toBeNull();
    expect(coldCacheAt(previous, BUILT_AT + minutes(5) + 1)).toEqual({ idleMs: minutes(5) + 1, retention: "5m" });
  });

  it("judges the retention the previous build opted into, else its family's default", () => {
    const opted1h = { builtAtMs: BUILT_AT, family: claude, optedRetention: "1h" };
    expect(coldCacheAt(opted1h, BUILT_AT + minutes(59))).toBeNull();
    expect(coldCacheAt(opted1h, BUILT_AT + minutes(61))).toMatchObject({ retention: "1h" });
    const gpt = { builtAtMs: BUILT_AT, family: gpt56, optedRetention: "" };
    expect(coldCacheAt(gpt, BUILT_AT + minutes(29))).toBeNull();
    expect(coldCacheAt(gpt, BUILT_AT + minutes(31))).toMatchObject({ retention: "30m" });
    // Not catalogued: the 5-minute default most providers keep.
    expect(coldCacheAt({ builtAtMs: BUILT_AT, family: null, optedRetention: "" }, BUILT_AT + minutes(6))).toMatchObject(
      { retention: "5m" },
    );
  });

  it("is never cold for a previous build stamped later than now (another replica's clock)", () => {
    expect(coldCacheAt({ builtAtMs: BUILT_AT, family: claude, optedRetention: "" }, BUILT_AT - minutes(10))).toBeNull();
  });
});

describe("formatIdleGap", () => {
  it.each([
    [minutes(7) + 59_000, "7m"],
    [minutes(119), "119m"],
    [minutes(150), "2h"],
    [minutes(60 * 47), "47h"],
    [minutes(60 * 50), "2d"],
  ])("%i ms is %s", (ms, text) => {
    expect(formatIdleGap(ms)).toBe(text);
  });
});
