import { describe, expect, it } from "vitest";
import {
  baselineCachedShare,
  type CollapseThresholds,
  cachedShareOf,
  DEFAULT_COLLAPSE_THRESHOLDS,
  detectCollapse,
} from "./collapse-detection";
import type { EarlierCall } from "./model";
import { SESSION_811_COLLAPSE } from "./seed-001-fixtures";

let clock = 1_760_418_000_000;

/** An earlier call with the given cached share of a 400k-token prompt. */
function call(share: number, overrides: Partial<EarlierCall> = {}): EarlierCall {
  const promptTokens = overrides.promptTokens ?? 400_000;
  clock += 60_000;
  return {
    promptTokens,
    cachedTokens: Math.round(promptTokens * share),
    model: "glm-4.6",
    calledAtMs: clock,
    firstOfSession: false,
    ...overrides,
  };
}

const first = (share = 0) => call(share, { firstOfSession: true });

describe("detectCollapse", () => {
  it("flags seed 001's session 811: 1.9% cached against a norm of 99.8%", () => {
    const earlier = [first(), call(0.998), call(0.997), call(0.999), call(0.998), call(0.998)];
    const detection = detectCollapse(SESSION_811_COLLAPSE, earlier, false);
    expect(detection.collapsed).toBe(true);
    expect(detection.cachedShare).toBeCloseTo(8_576 / 453_569, 10);
    expect(detection.baselineShare).toBeCloseTo(0.998, 10);
  });

  it("never flags the first call of a session, whatever its share", () => {
    expect(detectCollapse(SESSION_811_COLLAPSE, [], false)).toMatchObject({ collapsed: false, reason: "first_call" });
    const earlier = [first(), call(0.99), call(0.99), call(0.99)];
    // The build said first_build (e.g. the usage of earlier calls was never reported).
    expect(detectCollapse(SESSION_811_COLLAPSE, earlier, true)).toMatchObject({
      collapsed: false,
      reason: "first_call",
    });
  });

  it("needs minHistoryCalls eligible calls: the first call and small prompts do not count", () => {
    const tooFew = [first(), call(0.99), call(0.99), call(0.99, { promptTokens: 800 })];
    expect(detectCollapse(SESSION_811_COLLAPSE, tooFew, false)).toMatchObject({
      collapsed: false,
      reason: "too_little_history",
      baselineShare: null,
    });
    expect(detectCollapse(SESSION_811_COLLAPSE, [...tooFew, call(0.99)], false).collapsed).toBe(true);
  });

  it("does not judge a prompt too small for the provider to cache", () => {
    const earlier = [first(), call(0.99), call(0.99), call(0.99)];
    const small = { promptTokens: 900, cachedTokens: 0, completionTokens: 10, cacheCreationTokens: 0 };
    expect(detectCollapse(small, earlier, false)).toMatchObject({ collapsed: false, reason: "small_prompt" });
  });

  it("draws the line at collapseFraction of the norm", () => {
    const earlier = [first(), call(0.99), call(0.99), call(0.99)];
    const at = (share: number) => ({
      promptTokens: 100_000,
      cachedTokens: Math.round(100_000 * share),
      completionTokens: 0,
      cacheCreationTokens: 0,
    });
    expect(detectCollapse(at(0.5), earlier, false)).toMatchObject({ collapsed: false, reason: "within_norm" });
    expect(detectCollapse(at(0.49), earlier, false).collapsed).toBe(true);
    const strict: CollapseThresholds = { ...DEFAULT_COLLAPSE_THRESHOLDS, collapseFraction: 0.9 };
    expect(detectCollapse(at(0.85), earlier, false, strict).collapsed).toBe(true);
  });

  it("leaves a session that never caches alone", () => {
    const earlier = [first(), call(0.3), call(0.25), call(0.35)];
    const none = { promptTokens: 100_000, cachedTokens: 0, completionTokens: 0, cacheCreationTokens: 0 };
    expect(detectCollapse(none, earlier, false)).toMatchObject({
      collapsed: false,
      reason: "session_does_not_cache",
      baselineShare: 0.3,
    });
  });
});

describe("baselineCachedShare", () => {
  it("is the median of the non-first calls, so the cold first call does not drag it down", () => {
    expect(baselineCachedShare([first(0), call(0.99), call(0.98), call(0.97)])).toBeCloseTo(0.98, 10);
    expect(baselineCachedShare([first(0), call(0.99), call(0.98), call(0.97), call(0.96)])).toBeCloseTo(0.975, 10);
  });

  it("is not lowered by one earlier collapse", () => {
    expect(baselineCachedShare([first(), call(0.99), call(0.02), call(0.99), call(0.99)])).toBeCloseTo(0.99, 10);
  });

  it("looks at the last baselineCalls calls only", () => {
    const thresholds = { ...DEFAULT_COLLAPSE_THRESHOLDS, baselineCalls: 3 };
    const earlier = [first(), call(0.2), call(0.2), call(0.2), call(0.2), call(0.9), call(0.95), call(0.9)];
    expect(baselineCachedShare(earlier, thresholds)).toBeCloseTo(0.9, 10);
    expect(baselineCachedShare(earlier)).toBeCloseTo(0.2, 10);
  });
});

describe("cachedShareOf", () => {
  it("is cached/prompt, 0 for an empty prompt", () => {
    expect(cachedShareOf({ promptTokens: 453_569, cachedTokens: 8_576 })).toBeCloseTo(0.0189, 4);
    expect(cachedShareOf({ promptTokens: 0, cachedTokens: 0 })).toBe(0);
  });
});
