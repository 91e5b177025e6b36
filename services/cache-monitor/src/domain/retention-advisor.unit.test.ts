import { describe, expect, it } from "vitest";
import { BUILTIN_CATALOGUE, catalogueEntryFor } from "./price-catalogue";
import type { PriceTable } from "./price-table";
import { type AdvisedCall, adviseRetention, offeredRetentions, writePriceFor } from "./retention-advisor";

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 9, 14, 5, 0, 0);

function catalogue(model: string): PriceTable {
  const prices = catalogueEntryFor(BUILTIN_CATALOGUE, model)?.prices;
  if (prices === undefined) throw new Error(`no catalogue entry for ${model}`);
  return prices;
}

function call(atMinute: number, promptTokens: number, cachedTokens: number, overrides: Partial<AdvisedCall> = {}) {
  return {
    model: "claude-sonnet-4-5",
    calledAtMs: T0 + atMinute * MINUTE,
    promptTokens,
    cachedTokens,
    completionTokens: 100,
    cacheCreationTokens: promptTokens - cachedTokens,
    cacheCreation1hTokens: 0,
    cost: 0.01,
    ...overrides,
  } satisfies AdvisedCall;
}

const costOf = (advice: ReturnType<typeof adviseRetention>, retention: string) =>
  advice.retentions.find((r) => r.retention === retention);

describe("adviseRetention", () => {
  it("reprices a hit, an expiry and a prefix change under each retention (hand-computed, Sonnet prices)", () => {
    const calls = [
      call(0, 10_000, 0), // first call: misses under every retention
      call(2, 10_500, 10_000), // hit 2 minutes later
      call(22, 11_000, 0), // missed after 20 idle minutes: an expiry under 5m
      call(23, 11_500, 500), // missed 1 minute later: our prefix changed, no retention helps
    ];
    const advice = adviseRetention(calls, catalogue);
    // 5m: 10,000×3.75 | 10,000×0.3 + 500×3.75 | 11,000×3.75 | 11,500×3.75, plus 4 × 100×15, per million
    expect(costOf(advice, "5m")).toMatchObject({ hits: 1, misses: 3, offered: true });
    expect(costOf(advice, "5m")?.cost).toBeCloseTo(0.13275, 9);
    // 1h: 10,000×6 | 10,000×0.3 + 500×6 | 10,500×0.3 + 500×6 | 11,500×6, plus 4 × 1,500
    expect(costOf(advice, "1h")).toMatchObject({ hits: 2, misses: 2, offered: true });
    expect(costOf(advice, "1h")?.cost).toBeCloseTo(0.14715, 9);
    // Anthropic sells no 24h retention: priced (at the 1h write price) but never recommended.
    expect(costOf(advice, "24h")).toMatchObject({ offered: false, hits: 2 });
    expect(advice.cheapest).toBe("5m");
    expect(advice.savingVsDefault).toBe(0);
    expect(advice.savingVsNext).toBeCloseTo(0.0144, 9);
    expect(advice.recordedCost).toBeCloseTo(0.04, 9);
  });

  it("recommends 1h for a session that calls every 20 minutes, and says by how much", () => {
    const calls = [0, 20, 40, 60, 80].map((minute, i) => call(minute, 100_000, i === 0 ? 0 : 3_000));
    // Each call after the first missed (3% read): all expiries under 5m.
    const advice = adviseRetention(calls, catalogue);
    expect(costOf(advice, "5m")?.hits).toBe(0);
    expect(costOf(advice, "1h")?.hits).toBe(4);
    expect(advice.cheapest).toBe("1h");
    // 5m: 5 × 100,000×3.75; 1h: 100,000×6 + 4 × 100,000×0.3; outputs equal on both sides.
    expect(advice.savingVsDefault).toBeCloseTo((5 * 375_000 - (600_000 + 4 * 30_000)) / 1_000_000, 9);
    expect(advice.savingVsNext).toBeCloseTo(advice.savingVsDefault, 9);
  });

  it("recommends 24h for an OpenAI session called every two hours, 1h not being sold", () => {
    const calls = [0, 120, 240].map((minute, i) =>
      call(minute, 50_000, i === 0 ? 0 : 1_024, { model: "gpt-5.4", cacheCreationTokens: 0 }),
    );
    const advice = adviseRetention(calls, catalogue);
    expect(costOf(advice, "1h")).toMatchObject({ offered: false, hits: 0 });
    expect(costOf(advice, "24h")).toMatchObject({ offered: true, hits: 2 });
    expect(advice.cheapest).toBe("24h");
    // Writes cost the input price (2.5); a read 0.25: two calls save 50,000 × 2.25 each.
    expect(advice.savingVsDefault).toBeCloseTo((2 * 50_000 * 2.25) / 1_000_000, 9);
  });

  it("never counts a miss after a model switch, or under a 1h retention that had not expired, as fixable", () => {
    const switched = [call(0, 20_000, 0), call(30, 20_000, 0, { model: "claude-opus-4-5" })];
    expect(adviseRetention(switched, catalogue).retentions.map((r) => r.hits)).toEqual([0, 0, 0]);
    const underOneHour = [call(0, 20_000, 0, { cacheCreation1hTokens: 20_000 }), call(20, 20_000, 0)];
    expect(adviseRetention(underOneHour, catalogue).retentions.map((r) => r.hits)).toEqual([0, 0, 0]);
  });

  it("reads the warm prefix at the session's median observed reuse", () => {
    // Hits reuse 90% of the previous prompt; the expiry's read is estimated the same way.
    const calls = [call(0, 10_000, 0), call(1, 10_000, 9_000), call(2, 10_000, 9_000), call(30, 10_000, 0)];
    const advice = adviseRetention(calls, catalogue);
    const oneHour = costOf(advice, "1h")?.cost ?? 0;
    const fiveMinutes = costOf(advice, "5m")?.cost ?? 0;
    // Only the last call differs: 10,000×3.75 under 5m vs 9,000×0.3 + 1,000×6 under 1h (the first
    // three calls' writes cost 6 instead of 3.75 under 1h).
    const firstThreeExtra = (10_000 + 1_000 + 1_000) * (6 - 3.75);
    expect(fiveMinutes - oneHour).toBeCloseTo((37_500 - (2_700 + 6_000) - firstThreeExtra) / 1_000_000, 9);
  });

  it("reads an expiry only up to its prefix break when the prefix changed during the gap (replay's naive run)", () => {
    // A session paused 20 minutes between calls; a sibling edited AGENTS.md during three of the four
    // pauses, so those calls match the old prefix only over the 4,000 tokens of tool definitions.
    const afterEdit = { tokensAfterBreak: 96_000 };
    const calls = [
      call(0, 100_000, 0),
      call(20, 100_000, 0),
      call(40, 100_000, 0, afterEdit),
      call(60, 100_000, 0, afterEdit),
      call(80, 100_000, 0, afterEdit),
    ];
    const advice = adviseRetention(calls, catalogue);
    // 5m: every call writes 100,000 × 3.75. 1h: 100,000×6 | 100,000×0.3 | 3 × (4,000×0.3 + 96,000×6).
    // Reading whole previous prompts instead, 1h would seem to cost 0.72 + outputs and win.
    const outputs = (5 * 100 * 15) / 1_000_000;
    expect(costOf(advice, "5m")?.cost).toBeCloseTo(1.875 + outputs, 9);
    expect(costOf(advice, "1h")).toMatchObject({ hits: 4, misses: 1 });
    expect(costOf(advice, "1h")?.cost).toBeCloseTo((600_000 + 30_000 + 3 * (1_200 + 576_000)) / 1_000_000 + outputs, 9);
    expect(advice.cheapest).toBe("5m");
  });

  it("misses an expiry under every retention when its break is at the start, and never reads past the warm prefix", () => {
    const toolsChanged = [call(0, 20_000, 0), call(30, 20_000, 0, { tokensAfterBreak: 20_000 })];
    expect(adviseRetention(toolsChanged, catalogue).retentions.filter((r) => r.hits > 0)).toEqual([]);
    // A break in the new tail leaves the previous prompt (10,000) as the read.
    const lateBreak = [call(0, 10_000, 0), call(30, 12_000, 0, { tokensAfterBreak: 500 })];
    const oneHour = costOf(adviseRetention(lateBreak, catalogue), "1h")?.cost ?? 0;
    expect(oneHour).toBeCloseTo((10_000 * 6 + 10_000 * 0.3 + 2_000 * 6 + 2 * 100 * 15) / 1_000_000, 9);
  });

  it("prices several sessions together, each call against its own session's previous call", () => {
    const one = [call(0, 100_000, 0), call(20, 100_000, 3_000)].map((c) => ({ ...c, sessionId: "a" }));
    const two = [call(21, 100_000, 0), call(41, 100_000, 3_000)].map((c) => ({ ...c, sessionId: "b" }));
    const together = adviseRetention([...one, ...two], catalogue);
    // b's first call comes 1 minute after a's last, but it is a first call: it misses everywhere.
    expect(together.retentions.map((r) => r.hits)).toEqual([0, 2, 2]);
    const apart = [adviseRetention(one, catalogue), adviseRetention(two, catalogue)];
    expect(costOf(together, "1h")?.cost).toBeCloseTo(
      apart.reduce((sum, advice) => sum + (costOf(advice, "1h")?.cost ?? 0), 0),
      12,
    );
  });

  it("has no recommendation without calls", () => {
    const advice = adviseRetention([], catalogue);
    expect(advice).toMatchObject({ calls: 0, cheapest: null, savingVsDefault: 0, savingVsNext: 0, recordedCost: 0 });
  });
});

describe("write prices per retention", () => {
  it("falls back from 24h to 1h to 5m to the input price", () => {
    const sonnet = catalogue("claude-sonnet-4-5");
    expect(["5m", "1h", "24h"].map((r) => writePriceFor(sonnet, r as "5m"))).toEqual([3.75, 6, 6]);
    const seed: PriceTable = { inputPerMillion: 2, cachedInputPerMillion: 0.04, outputPerMillion: 8 };
    expect(["5m", "1h", "24h"].map((r) => writePriceFor(seed, r as "5m"))).toEqual([2, 2, 2]);
    expect(offeredRetentions(seed)).toEqual(["5m", "1h", "24h"]);
    expect(offeredRetentions(catalogue("gpt-5"))).toEqual(["5m", "24h"]);
    expect(offeredRetentions(catalogue("deepseek-chat"))).toEqual(["5m"]);
  });
});

describe("gpt-5.6: the 30-minute retention its provider sells, writes at 1.25× input", () => {
  const model = "gpt-5.6-terra";
  // Four calls 20 minutes apart: within gpt-5.6's 30-minute life, past a 5-minute one.
  const calls = [0, 20, 40, 60].map((minute, index) =>
    call(minute, 100_000, index === 0 ? 0 : 96_000, { model, defaultRetention: "30m" }),
  );
  const advice = adviseRetention(calls, () => catalogue(model));

  it("compares 30m with the classic three and recommends it, the default, saving nothing against itself", () => {
    expect(advice.retentions.map((r) => [r.retention, r.offered])).toEqual([
      ["5m", false],
      ["30m", true],
      ["1h", false],
      ["24h", false],
    ]);
    expect(advice.defaultRetention).toBe("30m");
    expect(advice.cheapest).toBe("30m");
    expect(advice.savingVsDefault).toBe(0);
    expect(costOf(advice, "30m")?.hits).toBe(3);
    expect(costOf(advice, "5m")?.hits).toBe(0);
  });

  it("prices the writes at the catalogue's 1.25× (3.125 per million for terra), reads at 0.1×", () => {
    expect(writePriceFor(catalogue(model), "30m")).toBe(3.125);
    // Call 1 writes 100,000; calls 2–4 read 96,000 and write 4,000 each; 100 output tokens each at 15.
    const expected = (100_000 * 3.125 + 3 * (96_000 * 0.25 + 4_000 * 3.125) + 4 * 100 * 15) / 1_000_000;
    expect(costOf(advice, "30m")?.cost).toBeCloseTo(expected, 9);
  });
});
