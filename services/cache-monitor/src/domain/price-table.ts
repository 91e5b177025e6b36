// One model's prices, the unit pricing.ts computes with and price-catalogue.ts derives from the
// provider catalogue. Its own file, so the two import it without importing each other.

import type { Retention } from "./retention";

export interface PriceTable {
  /** Uncached prompt tokens. */
  readonly inputPerMillion: number;
  /** Prompt tokens read from the provider cache. */
  readonly cachedInputPerMillion: number;
  readonly outputPerMillion: number;
  /**
   * Prompt tokens written to the cache with the default (5-minute) TTL; Anthropic bills them above
   * the input price. Unset = they cost the plain input price, which is how seed 001's provider bills.
   */
  readonly cacheWritePerMillion?: number;
  /** Prompt tokens written with a 1-hour TTL (Anthropic: 2× input). Unset = the 5-minute write price. */
  readonly cacheWrite1hPerMillion?: number;
  /** Prompt tokens written with 24-hour retention (OpenAI bills them as input). Unset = the 1-hour write price. */
  readonly cacheWrite24hPerMillion?: number;
  /** The retentions the provider sells for this model (the advisor recommends only these); unset = not known, all. */
  readonly retentions?: readonly Retention[];
  /** Write price per retention (the catalogue's write multipliers); consulted before the fields above. */
  readonly writePerMillion?: Readonly<Partial<Record<Retention, number>>>;
  /** What the model's cache lives for when a build opts into nothing (gpt-5.6: 30m). Unset = 5m. */
  readonly defaultRetention?: Retention;
}
