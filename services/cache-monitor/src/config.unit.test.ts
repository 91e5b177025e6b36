import { ValidationError } from "@prefix-guard/errors";
import { BUILTIN_PROVIDER_CATALOGUE } from "@prefix-guard/providers";
import { describe, expect, it } from "vitest";
import { attributionThresholdsOf, collapseThresholdsOf, loadCacheMonitorConfig, priceBookOf } from "./config";
import { DEFAULT_COLLAPSE_THRESHOLDS } from "./domain/collapse-detection";
import { SEED_001_PRICES } from "./domain/pricing";

describe("cache-monitor configuration", () => {
  it("defaults to port 50054, a local SQLite file, seed 001's prices and the documented thresholds", () => {
    const config = loadCacheMonitorConfig({});
    expect(config.GRPC_PORT).toBe(50054);
    expect(config.DATABASE_URL).toBe("sqlite:.data/cache-monitor.sqlite");
    expect(config.CONSUMER_GROUP).toBe("cache-monitor");
    expect(config.METRICS_PORT).toBe(0);
    expect(priceBookOf(config, BUILTIN_PROVIDER_CATALOGUE)).toEqual({
      currency: "CNY",
      defaults: SEED_001_PRICES,
      perModel: {},
    });
    expect(collapseThresholdsOf(config)).toEqual(DEFAULT_COLLAPSE_THRESHOLDS);
    expect(attributionThresholdsOf(config)).toEqual({ nearZeroReadShare: 0.05, minPromptTokens: 1024 });
  });

  it("reads prices, per-model overrides and thresholds from the environment", () => {
    const config = loadCacheMonitorConfig({
      PRICE_INPUT_PER_MTOK: "3",
      PRICE_CACHED_INPUT_PER_MTOK: "0.3",
      PRICE_OUTPUT_PER_MTOK: "15",
      PRICE_CACHE_WRITE_PER_MTOK: "3.75",
      PRICE_CURRENCY: "USD",
      PRICE_MODEL_OVERRIDES: '{"glm-4.6":{"inputPerMillion":2,"cachedInputPerMillion":0.04,"outputPerMillion":8}}',
      COLLAPSE_MIN_PROMPT_TOKENS: "2048",
      COLLAPSE_BASELINE_CALLS: "10",
      COLLAPSE_MIN_HISTORY_CALLS: "2",
      COLLAPSE_FRACTION_OF_BASELINE: "0.25",
      COLLAPSE_MIN_BASELINE_SHARE: "0.6",
    });
    expect(priceBookOf(config, BUILTIN_PROVIDER_CATALOGUE)).toEqual({
      currency: "USD",
      defaults: { inputPerMillion: 3, cachedInputPerMillion: 0.3, outputPerMillion: 15, cacheWritePerMillion: 3.75 },
      perModel: { "glm-4.6": SEED_001_PRICES },
    });
    expect(collapseThresholdsOf(config)).toEqual({
      minPromptTokens: 2048,
      baselineCalls: 10,
      minHistoryCalls: 2,
      collapseFraction: 0.25,
      minBaselineShare: 0.6,
    });
  });

  it("reads the 1-hour write price, in the defaults and in an override", () => {
    const config = loadCacheMonitorConfig({
      PRICE_CACHE_WRITE_PER_MTOK: "2.5",
      PRICE_CACHE_WRITE_1H_PER_MTOK: "4",
      PRICE_MODEL_OVERRIDES:
        '{"claude-x":{"inputPerMillion":3,"cachedInputPerMillion":0.3,"outputPerMillion":15,"cacheWritePerMillion":3.75,"cacheWrite1hPerMillion":6}}',
    });
    const book = priceBookOf(config, BUILTIN_PROVIDER_CATALOGUE);
    expect(book.defaults).toMatchObject({ cacheWritePerMillion: 2.5, cacheWrite1hPerMillion: 4 });
    expect(book.perModel["claude-x"]).toMatchObject({ cacheWritePerMillion: 3.75, cacheWrite1hPerMillion: 6 });
    expect(book.catalogue).toBeUndefined();
  });

  it("turns the built-in catalogue on with PRICE_CATALOGUE=builtin, in USD", () => {
    const book = priceBookOf(loadCacheMonitorConfig({ PRICE_CATALOGUE: "builtin" }), BUILTIN_PROVIDER_CATALOGUE);
    expect(book.currency).toBe("USD");
    expect(book.catalogue?.length).toBeGreaterThan(0);
    expect(
      priceBookOf(
        loadCacheMonitorConfig({ PRICE_CATALOGUE: "builtin", PRICE_CURRENCY: "USD" }),
        BUILTIN_PROVIDER_CATALOGUE,
      ).currency,
    ).toBe("USD");
  });

  it("refuses bad values naming the variable", () => {
    const fieldOf = (env: NodeJS.ProcessEnv) => {
      try {
        loadCacheMonitorConfig(env);
      } catch (error) {
        if (error instanceof ValidationError) return error.field;
      }
      return null;
    };
    expect(fieldOf({ PRICE_MODEL_OVERRIDES: "{not json" })).toBe("PRICE_MODEL_OVERRIDES");
    expect(
      fieldOf({ PRICE_MODEL_OVERRIDES: '{"m":{"inputPerMillion":-1,"cachedInputPerMillion":0,"outputPerMillion":0}}' }),
    ).toMatch(/^PRICE_MODEL_OVERRIDES/);
    expect(fieldOf({ COLLAPSE_FRACTION_OF_BASELINE: "1.5" })).toBe("COLLAPSE_FRACTION_OF_BASELINE");
    expect(fieldOf({ PRICE_CATALOGUE: "builtin", PRICE_CURRENCY: "CNY" })).toBe("PRICE_CURRENCY");
    expect(fieldOf({ PRICE_CATALOGUE: "everything" })).toBe("PRICE_CATALOGUE");
    expect(fieldOf({ PRICE_CACHE_WRITE_1H_PER_MTOK: "-1" })).toBe("PRICE_CACHE_WRITE_1H_PER_MTOK");
    expect(fieldOf({ PRICE_INPUT_PER_MTOK: "-2" })).toBe("PRICE_INPUT_PER_MTOK");
    expect(fieldOf({ COLLAPSE_BASELINE_CALLS: "0" })).toBe("COLLAPSE_BASELINE_CALLS");
  });
});
