import { describe, expect, it } from "vitest";
import { SESSION_811_COLLAPSE } from "../../test/seed-001-fixtures";
import {
  type CollapseThresholds,
  cachedShareOf,
  DEFAULT_COLLAPSE_THRESHOLDS,
  detectCollapse,
  reuseOf,
  sessionNorm,
} from "./collapse-detection";
import type { EarlierCall } from "./model";

let clock = 1_760_418_000_000;

/** An earlier call with the given cached share of a 400k-token prompt (so its reuse of a 400k predecessor is the same). */
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
    expect(detection.reuse).toBeCloseTo(8_576 / 400_000, 10);
    expect(detection.baselineReuse).toBeCloseTo(0.998, 10);
    expect(detection.reason).toBeNull();
  });

  it("is not fooled by a large appended tool result: the warm prefix was all reused", () => {
    const small = (share: number, overrides: Partial<EarlierCall> = {}) =>
      call(share, { promptTokens: 10_000, ...overrides });
    const earlier = [small(0, { firstOfSession: true }), small(0.97), small(0.97), small(0.97), small(0.97)];
    // 10k sent before, all of it served again; 30k of new tool output behind it: 25% of the prompt cached.
    const appended = { promptTokens: 40_000, cachedTokens: 10_000, completionTokens: 200, cacheCreationTokens: 0 };
    const detection = detectCollapse(appended, earlier, false);
    expect(detection.cachedShare).toBeCloseTo(0.25, 10);
    // A share rule would flag this (25% against a 97% norm); reuse says nothing was lost.
    expect(detection).toMatchObject({ collapsed: false, reason: "within_norm", reuse: 1 });
  });

  it("flags a break that keeps only the part before a late system section (the replay's workspace-rules)", () => {
    const sized = (promptTokens: number, cachedTokens: number, firstOfSession = false): EarlierCall =>
      call(0, { promptTokens, cachedTokens, firstOfSession });
    const earlier = [sized(9_000, 0, true), sized(10_000, 8_900), sized(11_000, 9_900), sized(12_300, 10_900)];
    // Tools and the system sections before workspace-rules (8,141 tokens) are all the provider kept.
    const afterRulesEdit = { promptTokens: 12_849, cachedTokens: 8_141, completionTokens: 300, cacheCreationTokens: 0 };
    const detection = detectCollapse(afterRulesEdit, earlier, false);
    expect(detection.cachedShare).toBeCloseTo(0.634, 3);
    expect(detection.reuse).toBeCloseTo(8_141 / 12_300, 10);
    expect(detection.collapsed).toBe(true);
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
    // The 800-token call counts neither itself nor as the predecessor of the next one.
    const tooFew = [first(), call(0.99), call(0.99, { promptTokens: 800 }), call(0.99), call(0.99)];
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

  it("draws the line at collapseFraction of the normal reuse", () => {
    const earlier = [first(), call(1), call(1), call(1)];
    // Reuse of the 400k previous prompt, whatever this prompt's size.
    const at = (reuse: number) => ({
      promptTokens: 420_000,
      cachedTokens: Math.round(400_000 * reuse),
      completionTokens: 0,
      cacheCreationTokens: 0,
    });
    expect(detectCollapse(at(0.75), earlier, false)).toMatchObject({ collapsed: false, reason: "within_norm" });
    expect(detectCollapse(at(0.74), earlier, false).collapsed).toBe(true);
    const lenient: CollapseThresholds = { ...DEFAULT_COLLAPSE_THRESHOLDS, collapseFraction: 0.5 };
    expect(detectCollapse(at(0.6), earlier, false, lenient).collapsed).toBe(false);
    expect(detectCollapse(at(0.49), earlier, false, lenient).collapsed).toBe(true);
  });

  it("does not judge a call whose predecessor was too small to cache", () => {
    const earlier = [first(), call(0.99), call(0.99), call(0.99), call(0, { promptTokens: 900 })];
    expect(detectCollapse(SESSION_811_COLLAPSE, earlier, false)).toMatchObject({
      collapsed: false,
      reason: "small_prompt",
    });
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

describe("sessionNorm", () => {
  it("is the median of the non-first calls, so the cold first call does not drag it down", () => {
    expect(sessionNorm([first(0), call(0.99), call(0.98), call(0.97)])?.reuse).toBeCloseTo(0.98, 10);
    expect(sessionNorm([first(0), call(0.99), call(0.98), call(0.97), call(0.96)])?.share).toBeCloseTo(0.975, 10);
  });

  it("is not lowered by one earlier collapse", () => {
    expect(sessionNorm([first(), call(0.99), call(0.02), call(0.99), call(0.99)])?.reuse).toBeCloseTo(0.99, 10);
  });

  it("looks at the last baselineCalls calls only", () => {
    const thresholds = { ...DEFAULT_COLLAPSE_THRESHOLDS, baselineCalls: 3 };
    const earlier = [first(), call(0.2), call(0.2), call(0.2), call(0.2), call(0.9), call(0.95), call(0.9)];
    expect(sessionNorm(earlier, thresholds)?.reuse).toBeCloseTo(0.9, 10);
    expect(sessionNorm(earlier)?.reuse).toBeCloseTo(0.2, 10);
  });

  it("measures reuse against the previous prompt, share against the call's own", () => {
    const earlier = [
      first(0),
      call(0, { promptTokens: 10_000, cachedTokens: 9_000 }),
      call(0, { promptTokens: 20_000, cachedTokens: 10_000 }),
      call(0, { promptTokens: 30_000, cachedTokens: 20_000 }),
    ];
    // Reuse: 9k of the first call's 400k, 10k of 10k, 20k of 20k; shares 0.9, 0.5, 0.667.
    expect(sessionNorm(earlier)).toEqual({ reuse: 1, share: 20_000 / 30_000 });
  });
});

describe("reuseOf", () => {
  it("is cached over the previous prompt, capped at 1, 0 with nothing sent before", () => {
    expect(reuseOf(8_141, 12_300)).toBeCloseTo(0.662, 3);
    expect(reuseOf(15_000, 12_300)).toBe(1);
    expect(reuseOf(100, 0)).toBe(0);
  });
});

describe("cachedShareOf", () => {
  it("is cached/prompt, 0 for an empty prompt", () => {
    expect(cachedShareOf({ promptTokens: 453_569, cachedTokens: 8_576 })).toBeCloseTo(0.0189, 4);
    expect(cachedShareOf({ promptTokens: 0, cachedTokens: 0 })).toBe(0);
  });
});
