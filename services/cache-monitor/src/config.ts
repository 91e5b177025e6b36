import { loadConfig, port, z } from "@prefix-guard/config";
import type { ProviderCatalogue } from "@prefix-guard/providers";
import { commonConfigShape } from "@prefix-guard/runtime";
import { DEFAULT_BUILD_WAIT_MS } from "./application/cache-monitor";
import type { AttributionThresholds } from "./domain/attribution";
import { type CollapseThresholds, DEFAULT_COLLAPSE_THRESHOLDS } from "./domain/collapse-detection";
import { CATALOGUE_CURRENCY, priceCatalogueOf } from "./domain/price-catalogue";
import type { PriceTable } from "./domain/price-table";
import { type PriceBook, SEED_001_PRICES } from "./domain/pricing";

const pricePerMillion = (fallback: number) => z.coerce.number().finite().min(0).default(fallback);
const share = (fallback: number) => z.coerce.number().min(0).max(1).default(fallback);
const count = (fallback: number, min: number) => z.coerce.number().int().min(min).max(1_000_000).default(fallback);

const priceTableSchema = z.object({
  inputPerMillion: z.number().finite().min(0),
  cachedInputPerMillion: z.number().finite().min(0),
  outputPerMillion: z.number().finite().min(0),
  cacheWritePerMillion: z.number().finite().min(0).optional(),
  cacheWrite1hPerMillion: z.number().finite().min(0).optional(),
});

/**
 * `{"model": {"inputPerMillion": 3, "cachedInputPerMillion": 0.3, "outputPerMillion": 15,
 * "cacheWritePerMillion": 3.75, "cacheWrite1hPerMillion": 6}}`
 */
const modelOverrides = z
  .string()
  .default("{}")
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: "custom", message: "must be a JSON object of model → price table" });
      return z.NEVER;
    }
  })
  .pipe(z.record(z.string().min(1), priceTableSchema));

const cacheMonitorConfigShape = z.object({
  ...commonConfigShape,
  GRPC_PORT: port(50054),
  DATABASE_URL: z.string().min(1).default("sqlite:.data/cache-monitor.sqlite"),
  /** Prefix of the consumer groups: `<group>.prefix` reads prompt.prefix.v1, `<group>.usage` reads llm.usage.v1. */
  CONSUMER_GROUP: z.string().min(1).default("cache-monitor"),
  /** Prices per million tokens; defaults are seed 001 §1.1's (yuan). */
  PRICE_INPUT_PER_MTOK: pricePerMillion(SEED_001_PRICES.inputPerMillion),
  PRICE_CACHED_INPUT_PER_MTOK: pricePerMillion(SEED_001_PRICES.cachedInputPerMillion),
  PRICE_OUTPUT_PER_MTOK: pricePerMillion(SEED_001_PRICES.outputPerMillion),
  /** 5-minute (default TTL) cache writes. Unset: they cost the input price. */
  PRICE_CACHE_WRITE_PER_MTOK: z.coerce.number().finite().min(0).optional(),
  /** 1-hour cache writes (Anthropic ttl "1h"). Unset: they cost the 5-minute write price. */
  PRICE_CACHE_WRITE_1H_PER_MTOK: z.coerce.number().finite().min(0).optional(),
  /**
   * Label of the unit prices are in, stored with every usage. Unset: CNY (seed 001's yuan), or USD
   * when PRICE_CATALOGUE=builtin (the catalogue's list prices are USD).
   */
  PRICE_CURRENCY: z.string().min(1).max(16).optional(),
  PRICE_MODEL_OVERRIDES: modelOverrides,
  /**
   * "off" (default): every model not in PRICE_MODEL_OVERRIDES is priced with PRICE_*. "builtin":
   * models of a family in the provider catalogue get its USD list prices and write multipliers
   * (libs/providers/catalogue.json, PROVIDER_CATALOGUE_FILE) unless PRICE_MODEL_OVERRIDES names them.
   */
  PRICE_CATALOGUE: z.enum(["off", "builtin"]).default("off"),
  /**
   * The operator's provider catalogue file (JSON), merged over the built-in one: each model family's
   * prices, default retention (what expiry is judged against) and usage fields. Checked at start.
   */
  PROVIDER_CATALOGUE_FILE: z.string().min(1).optional(),
  COLLAPSE_MIN_PROMPT_TOKENS: count(DEFAULT_COLLAPSE_THRESHOLDS.minPromptTokens, 0),
  COLLAPSE_BASELINE_CALLS: count(DEFAULT_COLLAPSE_THRESHOLDS.baselineCalls, 1),
  COLLAPSE_MIN_HISTORY_CALLS: count(DEFAULT_COLLAPSE_THRESHOLDS.minHistoryCalls, 1),
  COLLAPSE_FRACTION_OF_BASELINE: share(DEFAULT_COLLAPSE_THRESHOLDS.collapseFraction),
  COLLAPSE_MIN_BASELINE_SHARE: share(DEFAULT_COLLAPSE_THRESHOLDS.minBaselineShare),
  /** A provider cache read at or below this share of the prompt counts as "read ≈ 0" (a miss). */
  ATTRIBUTION_NEAR_ZERO_READ_SHARE: share(0.05),
  /**
   * How long RecordUsage waits for its build's FingerprintObserved (on its way through Kafka) before
   * answering FAILED_PRECONDITION `request_not_built`; 0 = only what is stored already.
   */
  USAGE_BUILD_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(DEFAULT_BUILD_WAIT_MS),
});

/** One price book, one currency: the USD catalogue cannot be mixed with prices in another unit. */
export const cacheMonitorConfigSchema = cacheMonitorConfigShape.superRefine((config, ctx) => {
  if (
    config.PRICE_CATALOGUE === "builtin" &&
    config.PRICE_CURRENCY !== undefined &&
    config.PRICE_CURRENCY !== CATALOGUE_CURRENCY
  )
    ctx.addIssue({
      code: "custom",
      path: ["PRICE_CURRENCY"],
      message: `must be ${CATALOGUE_CURRENCY} (or unset) with PRICE_CATALOGUE=builtin: the catalogue's prices are ${CATALOGUE_CURRENCY}`,
    });
});

export type CacheMonitorConfig = z.infer<typeof cacheMonitorConfigSchema>;

export function loadCacheMonitorConfig(env: NodeJS.ProcessEnv = process.env): CacheMonitorConfig {
  return loadConfig(cacheMonitorConfigSchema, env);
}

/** @param catalogue the provider catalogue (built-in, with PROVIDER_CATALOGUE_FILE merged over it). */
export function priceBookOf(config: CacheMonitorConfig, catalogue: ProviderCatalogue): PriceBook {
  const defaults: PriceTable = {
    inputPerMillion: config.PRICE_INPUT_PER_MTOK,
    cachedInputPerMillion: config.PRICE_CACHED_INPUT_PER_MTOK,
    outputPerMillion: config.PRICE_OUTPUT_PER_MTOK,
    ...(config.PRICE_CACHE_WRITE_PER_MTOK !== undefined
      ? { cacheWritePerMillion: config.PRICE_CACHE_WRITE_PER_MTOK }
      : {}),
    ...(config.PRICE_CACHE_WRITE_1H_PER_MTOK !== undefined
      ? { cacheWrite1hPerMillion: config.PRICE_CACHE_WRITE_1H_PER_MTOK }
      : {}),
  };
  const perModel: Record<string, PriceTable> = {};
  for (const [model, table] of Object.entries(config.PRICE_MODEL_OVERRIDES)) {
    perModel[model] = {
      inputPerMillion: table.inputPerMillion,
      cachedInputPerMillion: table.cachedInputPerMillion,
      outputPerMillion: table.outputPerMillion,
      ...(table.cacheWritePerMillion !== undefined ? { cacheWritePerMillion: table.cacheWritePerMillion } : {}),
      ...(table.cacheWrite1hPerMillion !== undefined ? { cacheWrite1hPerMillion: table.cacheWrite1hPerMillion } : {}),
    };
  }
  if (config.PRICE_CATALOGUE === "builtin")
    return {
      currency: config.PRICE_CURRENCY ?? CATALOGUE_CURRENCY,
      defaults,
      perModel,
      catalogue: priceCatalogueOf(catalogue),
    };
  return { currency: config.PRICE_CURRENCY ?? "CNY", defaults, perModel };
}

export function collapseThresholdsOf(config: CacheMonitorConfig): CollapseThresholds {
  return {
    minPromptTokens: config.COLLAPSE_MIN_PROMPT_TOKENS,
    baselineCalls: config.COLLAPSE_BASELINE_CALLS,
    minHistoryCalls: config.COLLAPSE_MIN_HISTORY_CALLS,
    collapseFraction: config.COLLAPSE_FRACTION_OF_BASELINE,
    minBaselineShare: config.COLLAPSE_MIN_BASELINE_SHARE,
  };
}

export function attributionThresholdsOf(config: CacheMonitorConfig): AttributionThresholds {
  return {
    nearZeroReadShare: config.ATTRIBUTION_NEAR_ZERO_READ_SHARE,
    minPromptTokens: config.COLLAPSE_MIN_PROMPT_TOKENS,
  };
}
