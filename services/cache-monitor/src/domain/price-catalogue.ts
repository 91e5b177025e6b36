// The price book's per-family list prices (PRICE_CATALOGUE=builtin), derived from the provider
// catalogue (libs/providers/catalogue.json, extended by PROVIDER_CATALOGUE_FILE): each family's input
// and output prices, its read multiplier and a write multiplier per retention it sells. An exact model
// in PRICE_MODEL_OVERRIDES always wins over it, and a model no family matches uses the PRICE_* defaults.
// Where the numbers come from is in each family's `docs` and `checked`; `prefixctl providers` prints them.

import {
  BUILTIN_PROVIDER_CATALOGUE,
  catalogueModelName,
  familyOf,
  JUDGED_RETENTIONS,
  judgedRetention,
  type ModelFamily,
  type ProviderCatalogue,
  type Retention,
} from "@prefix-guard/providers";
import type { PriceTable } from "./price-table";

export interface CatalogueEntry {
  /** Model-name prefix of the family, lower case (`claude-sonnet-4`, `gpt-5-mini`). */
  readonly family: string;
  readonly prices: PriceTable;
}

export const CATALOGUE_CURRENCY = "USD";

const round = (n: number): number => Math.round(n * 1e6) / 1e6;

/** The retentions a family's provider sells it for: its default and every one a build may opt into, shortest first. */
function offered(family: ModelFamily): Retention[] {
  const sold = new Set<Retention>([family.defaultRetention, ...family.retentions.map(judgedRetention)]);
  return JUDGED_RETENTIONS.filter((retention) => sold.has(retention));
}

/** One family's prices as the price book reads them. */
export function priceTableOf(family: ModelFamily): PriceTable {
  const { inputPerMillion, outputPerMillion, readMultiplier, writeMultipliers } = family.prices;
  const writePerMillion: Partial<Record<Retention, number>> = {};
  for (const retention of JUDGED_RETENTIONS) {
    const multiplier = writeMultipliers[retention];
    if (multiplier !== undefined) writePerMillion[retention] = round(inputPerMillion * multiplier);
  }
  const oneHour = writePerMillion["1h"];
  const day = writePerMillion["24h"];
  return {
    inputPerMillion,
    cachedInputPerMillion: round(inputPerMillion * readMultiplier),
    outputPerMillion,
    // A write the usage does not split by TTL is written under the family's default retention.
    cacheWritePerMillion: writePerMillion[family.defaultRetention] ?? inputPerMillion,
    ...(oneHour === undefined ? {} : { cacheWrite1hPerMillion: oneHour }),
    ...(day === undefined ? {} : { cacheWrite24hPerMillion: day }),
    writePerMillion,
    defaultRetention: family.defaultRetention,
    retentions: offered(family),
  };
}

/** Every family of the catalogue as a price-book entry. */
export function priceCatalogueOf(catalogue: ProviderCatalogue): CatalogueEntry[] {
  return catalogue.families.map((family) => ({ family: family.family, prices: priceTableOf(family) }));
}

export const BUILTIN_CATALOGUE: readonly CatalogueEntry[] = priceCatalogueOf(BUILTIN_PROVIDER_CATALOGUE);

/** The model name as the catalogue knows it (see catalogueModelName). */
export const catalogueName = catalogueModelName;

const BOUNDARY = new Set(["-", ".", ":", "@", "_"]);

/** The longest family the model name starts with, at a name boundary (`gpt-5` matches `gpt-5.1`, not `gpt-50`). */
export function catalogueEntryFor(catalogue: readonly CatalogueEntry[], model: string): CatalogueEntry | null {
  const name = catalogueName(model);
  let best: CatalogueEntry | null = null;
  for (const entry of catalogue) {
    if (!name.startsWith(entry.family)) continue;
    const next = name.charAt(entry.family.length);
    if (next !== "" && !BOUNDARY.has(next)) continue;
    if (best === null || entry.family.length > best.family.length) best = entry;
  }
  return best;
}

/** What a model's provider keeps its cache for when a build opts into nothing (5m for a model the catalogue lacks). */
export function defaultRetentionOf(catalogue: ProviderCatalogue, model: string): Retention {
  return familyOf(catalogue, model)?.defaultRetention ?? "5m";
}

/**
 * A model's prices with the retentions its provider sells and its default, from the catalogue, whatever
 * book priced it (the seed's yuan defaults know no retentions): the advisor recommends only those.
 */
export function withRetentionsSold(prices: PriceTable, catalogue: ProviderCatalogue, model: string): PriceTable {
  const family = familyOf(catalogue, model);
  if (family === null) return prices;
  return { ...prices, retentions: offered(family), defaultRetention: family.defaultRetention };
}
