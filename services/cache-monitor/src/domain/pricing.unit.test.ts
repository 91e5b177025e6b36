import { describe, expect, it } from "vitest";
import { SESSION_756_COLLAPSE, SESSION_811_COLLAPSE } from "../../test/seed-001-fixtures";
import {
  costAtCachedShare,
  costOf,
  DEFAULT_PRICE_BOOK,
  extraCost,
  hitStateCost,
  type PriceBook,
  pricesFor,
  SEED_001_PRICES,
} from "./pricing";

describe("seed 001 §1.1 figures with the default prices (2 / 0.04 / 8 yuan per million tokens)", () => {
  it("session 811 paid 0.8953 where the hit state costs 0.023: 0.872 extra", () => {
    const paid = costOf(SESSION_811_COLLAPSE, SEED_001_PRICES);
    const hit = hitStateCost(SESSION_811_COLLAPSE, SEED_001_PRICES);
    expect(paid).toBeCloseTo(0.8953, 4);
    expect(Math.abs(hit - 0.023)).toBeLessThan(0.0005);
    expect(Math.abs(extraCost(paid, hit) - 0.872)).toBeLessThan(0.001);
  });

  it("session 756 paid 0.9050 where the hit state costs 0.0457: 0.859 extra", () => {
    const paid = costOf(SESSION_756_COLLAPSE, SEED_001_PRICES);
    const hit = hitStateCost(SESSION_756_COLLAPSE, SEED_001_PRICES);
    expect(paid).toBeCloseTo(0.905, 4);
    expect(hit).toBeCloseTo(0.0457, 4);
    expect(Math.abs(extraCost(paid, hit) - 0.859)).toBeLessThan(0.001);
  });
});

describe("costOf", () => {
  const usage = { promptTokens: 10_000, cachedTokens: 2_000, completionTokens: 100, cacheCreationTokens: 5_000 };

  it("bills cache writes at the input price when the table has no write price", () => {
    // 8,000 uncached (writes included) × 2 + 2,000 × 0.04 + 100 × 8 = 16,880 per million
    expect(costOf(usage, SEED_001_PRICES)).toBeCloseTo(0.01688, 10);
  });

  it("bills cache writes at their own price when one is set (Anthropic-style 3 / 0.3 / 3.75 / 15)", () => {
    const anthropic = {
      inputPerMillion: 3,
      cachedInputPerMillion: 0.3,
      cacheWritePerMillion: 3.75,
      outputPerMillion: 15,
    };
    // 3,000 × 3 + 2,000 × 0.3 + 5,000 × 3.75 + 100 × 15 = 29,850 per million
    expect(costOf(usage, anthropic)).toBeCloseTo(0.02985, 10);
  });

  it("costs only the completion when everything was cached, nothing for an empty call", () => {
    expect(
      costOf(
        { promptTokens: 1_000, cachedTokens: 1_000, completionTokens: 0, cacheCreationTokens: 0 },
        SEED_001_PRICES,
      ),
    ).toBeCloseTo(0.00004, 12);
    expect(
      costOf({ promptTokens: 0, cachedTokens: 0, completionTokens: 0, cacheCreationTokens: 0 }, SEED_001_PRICES),
    ).toBe(0);
  });
});

describe("costAtCachedShare", () => {
  it("moves tokens from input to cached at the session's normal share", () => {
    // 811 at 99.8%: 452,662 cached, 907 uncached → 907×2 + 452,662×0.04 + 621×8 = 24,888.48 per million
    expect(costAtCachedShare(SESSION_811_COLLAPSE, SEED_001_PRICES, 0.998)).toBeCloseTo(0.02488848, 8);
  });

  it("clamps the share to [0, 1] and caps writes to the uncached rest", () => {
    const usage = { promptTokens: 1_000, cachedTokens: 0, completionTokens: 0, cacheCreationTokens: 1_000 };
    const withWrites = { ...SEED_001_PRICES, cacheWritePerMillion: 10 };
    expect(costAtCachedShare(usage, withWrites, 1.5)).toBeCloseTo((1_000 * 0.04) / 1e6, 12);
    // 600 cached, the 400 left are all writes
    expect(costAtCachedShare(usage, withWrites, 0.6)).toBeCloseTo((600 * 0.04 + 400 * 10) / 1e6, 12);
    expect(costAtCachedShare(usage, withWrites, -1)).toBeCloseTo((1_000 * 10) / 1e6, 12);
  });
});

describe("cache writes by TTL", () => {
  const usage = {
    promptTokens: 10_000,
    cachedTokens: 2_000,
    completionTokens: 100,
    cacheCreationTokens: 5_000,
    cacheCreation1hTokens: 4_000,
  };
  const anthropic = {
    inputPerMillion: 3,
    cachedInputPerMillion: 0.3,
    cacheWritePerMillion: 3.75,
    cacheWrite1hPerMillion: 6,
    outputPerMillion: 15,
  };

  it("bills 1-hour writes at their own price and the rest of the writes at the 5-minute price", () => {
    // 3,000 × 3 + 2,000 × 0.3 + 1,000 × 3.75 + 4,000 × 6 + 100 × 15 = 38,850 per million
    expect(costOf(usage, anthropic)).toBeCloseTo(0.03885, 10);
  });

  it("falls back to the 5-minute price without a 1-hour price, and to the input price without either", () => {
    const { cacheWrite1hPerMillion: _unused, ...fiveMinuteOnly } = anthropic;
    // 3,000 × 3 + 2,000 × 0.3 + 5,000 × 3.75 + 100 × 15 = 29,850 per million
    expect(costOf(usage, fiveMinuteOnly)).toBeCloseTo(0.02985, 10);
    // 8,000 × 2 + 2,000 × 0.04 + 100 × 8 = 16,880 per million: seed 001's provider bills writes as input
    expect(costOf(usage, SEED_001_PRICES)).toBeCloseTo(0.01688, 10);
  });

  it("caps 1-hour writes to the writes, and keeps them through the hit-state counterfactual", () => {
    expect(costOf({ ...usage, cacheCreation1hTokens: 9_000 }, anthropic)).toBeCloseTo(
      costOf({ ...usage, cacheCreation1hTokens: 5_000 }, anthropic),
      12,
    );
    // Fully cached: no room left for writes, so the hit state is reads + output only.
    expect(hitStateCost(usage, anthropic)).toBeCloseTo((10_000 * 0.3 + 100 * 15) / 1_000_000, 12);
    // Half cached: 5,000 left uncached, all of them the call's writes (4,000 of them 1-hour).
    expect(costAtCachedShare(usage, anthropic, 0.5)).toBeCloseTo(
      (5_000 * 0.3 + 1_000 * 3.75 + 4_000 * 6 + 100 * 15) / 1_000_000,
      12,
    );
  });
});

describe("prices per model", () => {
  const book: PriceBook = {
    ...DEFAULT_PRICE_BOOK,
    perModel: { "claude-sonnet": { inputPerMillion: 3, cachedInputPerMillion: 0.3, outputPerMillion: 15 } },
  };

  it("uses a model's own table and the defaults for every other model", () => {
    expect(pricesFor(book, "claude-sonnet").inputPerMillion).toBe(3);
    expect(pricesFor(book, "glm-4.6")).toEqual(SEED_001_PRICES);
    expect(DEFAULT_PRICE_BOOK.currency).toBe("CNY");
  });

  it("never reports negative extra cost", () => {
    expect(extraCost(0.01, 0.02)).toBe(0);
    expect(extraCost(0.05, 0.02)).toBeCloseTo(0.03, 12);
  });
});
