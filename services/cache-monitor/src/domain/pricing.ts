// What a call cost and what it would have cost had the provider cache held. Prices are per million
// tokens in one currency unit; the defaults are seed 001 §1.1's (yuan, 元), so the seed's figures
// come out unchanged: session 811 paid 0.8953 where the hit state costs 0.023.

import type { TokenUsage } from "./model";
import { type CatalogueEntry, catalogueEntryFor } from "./price-catalogue";
import type { PriceTable } from "./price-table";

export interface PriceBook {
  /** Label of the unit every price and cost is in; the seed's is yuan. */
  readonly currency: string;
  readonly defaults: PriceTable;
  /** Exact model name → its own prices; models not listed use the catalogue (when on), then `defaults`. */
  readonly perModel: Readonly<Record<string, PriceTable>>;
  /** The built-in per-family list prices (PRICE_CATALOGUE=builtin); absent = not consulted. */
  readonly catalogue?: readonly CatalogueEntry[];
}

/** Seed 001 §1.1: `prompt×0.04/M + completion×8/M` for the hit state, 2/M for uncached input. */
export const SEED_001_PRICES: PriceTable = { inputPerMillion: 2, cachedInputPerMillion: 0.04, outputPerMillion: 8 };

export const DEFAULT_PRICE_BOOK: PriceBook = { currency: "CNY", defaults: SEED_001_PRICES, perModel: {} };

const PER_MILLION = 1_000_000;

/** The model's own table (PRICE_MODEL_OVERRIDES), else its family's catalogue entry when the catalogue is on, else the defaults. */
export function pricesFor(book: PriceBook, model: string): PriceTable {
  const own = book.perModel[model];
  if (own !== undefined) return own;
  const entry = book.catalogue === undefined ? null : catalogueEntryFor(book.catalogue, model);
  return entry?.prices ?? book.defaults;
}

/**
 * Cost from token counts: cached tokens at the cached price, cache writes at their write price
 * (1-hour writes at the 1-hour price, the rest at the 5-minute price; either unset falls back to the
 * next cheaper rule, ending at the input price), the rest of the prompt at the input price,
 * completion at the output price.
 */
export function costOf(usage: TokenUsage, prices: PriceTable): number {
  const cached = Math.min(usage.cachedTokens, usage.promptTokens);
  const writes = Math.min(usage.cacheCreationTokens, usage.promptTokens - cached);
  const writes1h = Math.min(usage.cacheCreation1hTokens ?? 0, writes);
  const writes5m = writes - writes1h;
  const uncached = usage.promptTokens - cached - writes;
  const writePrice = prices.cacheWritePerMillion ?? prices.inputPerMillion;
  const write1hPrice = prices.cacheWrite1hPerMillion ?? writePrice;
  return (
    (uncached * prices.inputPerMillion +
      cached * prices.cachedInputPerMillion +
      writes5m * writePrice +
      writes1h * write1hPrice +
      usage.completionTokens * prices.outputPerMillion) /
    PER_MILLION
  );
}

/**
 * The same call had `share` of its prompt been read from the cache. Writes keep their count, capped
 * to what is left uncached (1-hour writes first): the share moves tokens from "input" to "cached",
 * nothing else.
 */
export function costAtCachedShare(usage: TokenUsage, prices: PriceTable, share: number): number {
  const bounded = Math.min(Math.max(share, 0), 1);
  const cachedTokens = Math.round(usage.promptTokens * bounded);
  const cacheCreationTokens = Math.min(usage.cacheCreationTokens, usage.promptTokens - cachedTokens);
  return costOf(
    {
      promptTokens: usage.promptTokens,
      cachedTokens,
      completionTokens: usage.completionTokens,
      cacheCreationTokens,
      cacheCreation1hTokens: Math.min(usage.cacheCreation1hTokens ?? 0, cacheCreationTokens),
    },
    prices,
  );
}

/** Seed 001's 命中态成本: the same call with its whole prompt cached. */
export function hitStateCost(usage: TokenUsage, prices: PriceTable): number {
  return costAtCachedShare(usage, prices, 1);
}

/** What the miss cost on top of the expectation; never negative (a call cheaper than expected cost nothing extra). */
export function extraCost(actualCost: number, expectedCost: number): number {
  return Math.max(0, actualCost - expectedCost);
}
