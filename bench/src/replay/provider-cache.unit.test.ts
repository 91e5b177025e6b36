import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import { describe, expect, it } from "vitest";
import { commonPrefix, costYuan, ProviderCacheSimulator, providerSegments, tokensAfterBreak } from "./provider-cache";

const tokens = (segments: readonly string[]) => segments.reduce((sum, s) => sum + estimateTokens(s), 0);
const T0 = 1_000_000;
const MINUTE = 60_000;

// Distinct, sizeable segments: tools, system, then messages.
const base = [
  "[tools:" + "t".repeat(400) + "]",
  `系统提示${"s".repeat(800)}`,
  `用户一${"u".repeat(120)}`,
  `助手一${"a".repeat(300)}`,
];
const appended = [...base, `用户二${"v".repeat(90)}`];

describe("commonPrefix", () => {
  it("counts whole equal segments, then the equal characters of the first unequal one", () => {
    expect(commonPrefix(["ab", "cd", "ef"], ["ab", "cx", "ef"])).toEqual({ segments: 1, chars: 1 });
    expect(commonPrefix(["ab"], ["ab", "cd"])).toEqual({ segments: 1, chars: 0 });
    expect(commonPrefix(["zz"], ["ab"])).toEqual({ segments: 0, chars: 0 });
  });

  it("does not split a surrogate pair", () => {
    expect(commonPrefix(["a😀"], ["a😁"]).chars).toBe(1);
  });
});

describe("tokensAfterBreak", () => {
  it("is what a warm cache of the previous request leaves unread when the prefix changed, and undefined for an append", () => {
    expect(tokensAfterBreak(base, appended, estimateTokens)).toBeUndefined();
    const editedSystem = [base[0] ?? "", `系统提示${"s".repeat(500)}改${"s".repeat(299)}`, ...appended.slice(2)];
    const cache = new ProviderCacheSimulator({ estimateTokens });
    cache.observe("s1", T0, base, 1);
    const served = cache.observe("s1", T0 + MINUTE, editedSystem, 1);
    expect(served.cachedTokens).toBeGreaterThan(tokens(base.slice(0, 1)));
    expect(tokensAfterBreak(base, editedSystem, estimateTokens)).toBe(served.promptTokens - served.cachedTokens);
  });
});

describe("ProviderCacheSimulator", () => {
  it("caches all but the appended tail when a request extends the previous one", () => {
    const cache = new ProviderCacheSimulator({ estimateTokens });
    const first = cache.observe("s1", T0, base, 1);
    expect(first).toEqual({ promptTokens: tokens(base), cachedTokens: 0, optimumCachedTokens: 0, ttlExpired: false });
    const second = cache.observe("s1", T0 + MINUTE, appended, 1);
    expect(second.promptTokens).toBe(tokens(appended));
    expect(second.cachedTokens).toBe(tokens(base));
    expect(second.optimumCachedTokens).toBe(tokens(base));
  });

  it("caches only up to a rewrite: segments before it and the equal start of the rewritten one", () => {
    const cache = new ProviderCacheSimulator({ estimateTokens });
    cache.observe("s1", T0, base, 1);
    const rewrittenSystem = `${(base[1] ?? "").slice(0, 500)}CHANGED${(base[1] ?? "").slice(500)}`;
    const rewritten = [base[0] ?? "", rewrittenSystem, ...base.slice(2), `用户二${"v".repeat(90)}`];
    const observed = cache.observe("s1", T0 + MINUTE, rewritten, 1);
    expect(observed.cachedTokens).toBe(tokens([base[0] ?? "", rewrittenSystem.slice(0, 500)]));
    // The optimum ignores the rewrite: everything but the new user message.
    expect(observed.optimumCachedTokens).toBe(tokens(rewritten.slice(0, -1)));
    expect(observed.cachedTokens).toBeLessThan(observed.optimumCachedTokens);
  });

  it("expires entries after the 5-minute TTL, for the actual cache and the optimum alike", () => {
    const cache = new ProviderCacheSimulator({ estimateTokens });
    cache.observe("s1", T0, base, 1);
    const late = cache.observe("s1", T0 + 5 * MINUTE, appended, 1);
    expect(late).toMatchObject({ cachedTokens: 0, optimumCachedTokens: 0, ttlExpired: true });
    const soon = cache.observe("s1", T0 + 9 * MINUTE, [...appended, "x"], 1);
    expect(soon.cachedTokens).toBe(tokens(appended));
    expect(soon.ttlExpired).toBe(false);
  });

  it("refreshes an entry on a hit, so a steady session never expires", () => {
    const cache = new ProviderCacheSimulator({ estimateTokens });
    let segments = base;
    cache.observe("s1", T0, segments, 1);
    for (let turn = 1; turn <= 5; turn += 1) {
      segments = [...segments, `turn ${turn}`];
      expect(cache.observe("s1", T0 + turn * 4 * MINUTE, segments, 1).cachedTokens).toBe(tokens(segments.slice(0, -1)));
    }
  });

  it("matches an older live entry when the latest request diverged earlier (a request undone)", () => {
    const cache = new ProviderCacheSimulator({ estimateTokens });
    cache.observe("s1", T0, base, 1);
    cache.observe("s1", T0 + MINUTE, [base[0] ?? "", "other system"], 1);
    expect(cache.observe("s1", T0 + 2 * MINUTE, appended, 2).cachedTokens).toBe(tokens(base));
  });

  it("keeps sessions apart", () => {
    const cache = new ProviderCacheSimulator({ estimateTokens });
    cache.observe("s1", T0, base, 1);
    expect(cache.observe("s2", T0 + MINUTE, appended, 1).cachedTokens).toBe(0);
  });
});

describe("providerSegments", () => {
  it("orders an OpenAI chat body as a provider reads it: tools, then system, then messages", () => {
    const body = JSON.stringify({
      messages: [
        { role: "system", content: "S" },
        { role: "user", content: "U" },
      ],
      model: "m",
      tools: [{ type: "function", function: { name: "t" } }],
    });
    const segments = providerSegments(body, (value) => JSON.stringify(value));
    expect(segments).toEqual([
      '[{"type":"function","function":{"name":"t"}}]',
      '{"role":"system","content":"S"}',
      '{"role":"user","content":"U"}',
    ]);
  });
});

describe("costYuan", () => {
  it("reproduces seed 001 §1.1: session 811 paid 0.8953 yuan, about 0.023 when fully cached", () => {
    // 453,569 prompt, 8,576 cached; the completion is what the seed's total leaves over (≈621 tokens).
    expect(costYuan(453_569, 8_576, 621)).toBeCloseTo(0.8953, 3);
    expect(costYuan(453_569, 453_569, 621)).toBeCloseTo(0.023, 3);
  });
});
