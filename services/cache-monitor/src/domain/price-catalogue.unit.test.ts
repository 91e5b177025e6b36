import { describe, expect, it } from "vitest";
import { BUILTIN_CATALOGUE, catalogueEntryFor, catalogueName } from "./price-catalogue";
import { costOf, DEFAULT_PRICE_BOOK, type PriceBook, pricesFor, SEED_001_PRICES } from "./pricing";

const family = (model: string) => catalogueEntryFor(BUILTIN_CATALOGUE, model)?.family ?? null;

describe("built-in price catalogue", () => {
  it("matches a model to its longest family at a name boundary", () => {
    expect(family("claude-sonnet-4-5-20250929")).toBe("claude-sonnet-4");
    expect(family("claude-opus-4-1-20250805")).toBe("claude-opus-4");
    expect(family("claude-opus-4-5")).toBe("claude-opus-4-5");
    expect(family("gpt-5.1")).toBe("gpt-5");
    expect(family("gpt-5-mini-2025-08-07")).toBe("gpt-5-mini");
    expect(family("gpt-5.4-mini")).toBe("gpt-5.4-mini");
    expect(family("gpt-4o-mini")).toBe("gpt-4o-mini");
    expect(family("gpt-4o")).toBe("gpt-4o");
    expect(family("gemini-2.5-flash-lite")).toBe("gemini-2.5-flash-lite");
    expect(family("models/gemini-2.5-pro")).toBe("gemini-2.5-pro");
    expect(family("us.anthropic.claude-haiku-4-5-20251001-v1:0")).toBe("claude-haiku-4-5");
    expect(family("DeepSeek-Chat")).toBe("deepseek-chat");
    expect(family("gpt-50")).toBeNull();
    expect(family("glm-4.6")).toBeNull();
    expect(catalogueName("openai/GPT-5")).toBe("gpt-5");
  });

  it("prices Anthropic writes at 1.25× (5 min) and 2× (1 h) input, reads at 0.1×", () => {
    expect(catalogueEntryFor(BUILTIN_CATALOGUE, "claude-sonnet-4-5")?.prices).toEqual({
      inputPerMillion: 3,
      cachedInputPerMillion: 0.3,
      cacheWritePerMillion: 3.75,
      cacheWrite1hPerMillion: 6,
      outputPerMillion: 15,
      writePerMillion: { "5m": 3.75, "1h": 6 },
      defaultRetention: "5m",
      retentions: ["5m", "1h"],
    });
    expect(catalogueEntryFor(BUILTIN_CATALOGUE, "claude-opus-4-5")?.prices.cacheWrite1hPerMillion).toBe(10);
  });

  it("leaves OpenAI before gpt-5.6, Gemini and DeepSeek writes at the input price", () => {
    for (const model of ["gpt-5", "gpt-5.5", "gemini-2.5-pro", "deepseek-chat"]) {
      const prices = catalogueEntryFor(BUILTIN_CATALOGUE, model)?.prices;
      expect(prices?.cacheWritePerMillion).toBe(prices?.inputPerMillion);
      expect(prices?.cacheWrite1hPerMillion).toBeUndefined();
    }
  });

  it("prices gpt-5.6 cache_write_tokens at 1.25× input under its 30-minute default, reads at 0.1×", () => {
    const prices = catalogueEntryFor(BUILTIN_CATALOGUE, "gpt-5.6-terra")?.prices;
    expect(prices).toMatchObject({
      inputPerMillion: 2.5,
      cachedInputPerMillion: 0.25,
      cacheWritePerMillion: 3.125,
      defaultRetention: "30m",
      retentions: ["30m"],
    });
    const usage = { promptTokens: 10_000, cachedTokens: 0, cacheCreationTokens: 8_000, completionTokens: 0 };
    // 2,000 × 2.5 + 8,000 × 3.125 = 30,000 per million; as plain input it would be 25,000.
    expect(costOf(usage, prices ?? SEED_001_PRICES)).toBeCloseTo(0.03, 10);
    expect(catalogueEntryFor(BUILTIN_CATALOGUE, "gpt-5.5")?.prices.retentions).toEqual(["24h"]);
  });

  it("is consulted only when the book carries it; an exact override wins, other models keep the defaults", () => {
    const override = { inputPerMillion: 9, cachedInputPerMillion: 0.9, outputPerMillion: 9 };
    const book: PriceBook = {
      currency: "USD",
      defaults: SEED_001_PRICES,
      perModel: { "gpt-5": override },
      catalogue: BUILTIN_CATALOGUE,
    };
    expect(pricesFor(DEFAULT_PRICE_BOOK, "claude-sonnet-4-5")).toEqual(SEED_001_PRICES);
    expect(pricesFor(book, "claude-sonnet-4-5").inputPerMillion).toBe(3);
    expect(pricesFor(book, "gpt-5")).toEqual(override);
    expect(pricesFor(book, "gpt-5.1").inputPerMillion).toBe(1.25);
    expect(pricesFor(book, "glm-4.6")).toEqual(SEED_001_PRICES);
  });

  it("prices an Anthropic-style call: 312 input, 2,048 read, 5,000 5-min and 40,000 1-h writes, 503 output", () => {
    const prices = pricesFor({ ...DEFAULT_PRICE_BOOK, catalogue: BUILTIN_CATALOGUE }, "claude-sonnet-4-5");
    const usage = {
      promptTokens: 312 + 2_048 + 45_000,
      cachedTokens: 2_048,
      cacheCreationTokens: 45_000,
      cacheCreation1hTokens: 40_000,
      completionTokens: 503,
    };
    // 312 × 3 + 2,048 × 0.3 + 5,000 × 3.75 + 40,000 × 6 + 503 × 15 = 267,845.4 per million
    expect(costOf(usage, prices)).toBeCloseTo(0.2678454, 10);
  });
});
