// The replay's provider usage priced with cache-write prices, as two real providers would bill it:
// an Anthropic-style provider (Claude Sonnet 4.5 list prices: writes 1.25× input for 5 minutes, 2× for
// 1 hour, reads 0.1×) and an OpenAI-style one (GPT-5.4: writes at the input price, in-memory or 24-hour
// retention). Each retention is priced on the cache simulated with that TTL, every prompt token not
// read being written (a breakpoint at the end of the prompt). Next to it, the retention advisor
// (cache-monitor's own `prefixctl advise` logic) is run on what a 5-minute provider reported and the
// prefix breaks the builder saw, so its estimate can be compared with the simulated truth.

import {
  type AdvisedCall,
  adviseRetention,
  BUILTIN_CATALOGUE,
  catalogueEntryFor,
  costOf,
  type PriceTable,
  type Retention,
  writePriceFor,
} from "@prefix-guard/cache-monitor";
import type { CacheObservation } from "./provider-cache";

export const PROVIDER_STYLES = {
  anthropic: { model: "claude-sonnet-4-5", retentions: ["5m", "1h"] },
  openai: { model: "gpt-5.4", retentions: ["5m", "24h"] },
} as const satisfies Record<string, { model: string; retentions: readonly Retention[] }>;
export type ProviderStyle = keyof typeof PROVIDER_STYLES;

/** Catalogue prices are in USD. */
export const WRITE_PRICED_CURRENCY = "USD";

export function stylePrices(style: ProviderStyle): PriceTable {
  const prices = catalogueEntryFor(BUILTIN_CATALOGUE, PROVIDER_STYLES[style].model)?.prices;
  if (prices === undefined) throw new Error(`the built-in catalogue has no ${PROVIDER_STYLES[style].model}`);
  return prices;
}

/** One call under one retention: reads at the read price, the rest of the prompt written at the retention's write price. */
export function writePricedCost(
  observation: CacheObservation,
  outputTokens: number,
  prices: PriceTable,
  retention: Retention,
): number {
  return costOf(
    {
      promptTokens: observation.promptTokens,
      cachedTokens: observation.cachedTokens,
      completionTokens: outputTokens,
      cacheCreationTokens: observation.promptTokens - observation.cachedTokens,
    },
    { ...prices, cacheWritePerMillion: writePriceFor(prices, retention) },
  );
}

export interface StyleResult {
  readonly model: string;
  /** Simulated cost per retention the provider sells, in USD. */
  readonly cost: Readonly<Partial<Record<Retention, number>>>;
  readonly cachedShare: Readonly<Partial<Record<Retention, number>>>;
  /** The advisor on the 5-minute usage: what it recommends and what it estimates each retention costs. */
  readonly advisor: {
    readonly recommended: Retention | null;
    readonly savingVsDefault: number;
    readonly estimated: Readonly<Partial<Record<Retention, number>>>;
  };
}

export type WritePricedResult = Readonly<Record<ProviderStyle, StyleResult>>;

/** The retention the simulation priced cheapest, of those the style sells. */
export function simulatedCheapest(result: StyleResult): Retention | null {
  const ranked = (Object.entries(result.cost) as [Retention, number][]).sort(([, a], [, b]) => a - b);
  return ranked[0]?.[0] ?? null;
}

/** The advisor's largest miss: |estimate − simulated cost| / simulated cost, over the retentions the style sells. */
export function advisorEstimateError(result: StyleResult): number {
  const errors = (Object.entries(result.cost) as [Retention, number][]).map(([retention, simulated]) => {
    const estimated = result.advisor.estimated[retention];
    if (estimated === undefined) return Number.POSITIVE_INFINITY;
    return simulated > 0 ? Math.abs(estimated - simulated) / simulated : Math.abs(estimated);
  });
  return Math.max(0, ...errors);
}

/** Sums a run's calls per style and retention; `observations` holds each simulated TTL's answer for the call. */
export class WritePricedTally {
  private readonly costs = new Map<string, number>();
  private readonly tokens = new Map<string, { prompt: number; cached: number }>();
  private readonly callsBySession = new Map<
    string,
    { atMs: number; observation: CacheObservation; output: number; tokensAfterBreak: number | undefined }[]
  >();

  add(
    sessionId: string,
    atMs: number,
    observations: Readonly<Record<(typeof PROVIDER_STYLES)[ProviderStyle]["retentions"][number], CacheObservation>>,
    outputTokens: number,
    /** What the builder would report as the prefix change's tokens_after_break; undefined without a change. */
    tokensAfterBreak?: number,
  ): void {
    for (const style of Object.keys(PROVIDER_STYLES) as ProviderStyle[]) {
      for (const retention of PROVIDER_STYLES[style].retentions) {
        const key = `${style}/${retention}`;
        const observation = observations[retention];
        this.costs.set(
          key,
          (this.costs.get(key) ?? 0) + writePricedCost(observation, outputTokens, stylePrices(style), retention),
        );
        const sum = this.tokens.get(key) ?? { prompt: 0, cached: 0 };
        this.tokens.set(key, {
          prompt: sum.prompt + observation.promptTokens,
          cached: sum.cached + observation.cachedTokens,
        });
      }
    }
    const calls = this.callsBySession.get(sessionId) ?? [];
    calls.push({ atMs, observation: observations["5m"], output: outputTokens, tokensAfterBreak });
    this.callsBySession.set(sessionId, calls);
  }

  /** What a 5-minute provider reported, as cache-monitor would have recorded it, session by session. */
  advisedCalls(style: ProviderStyle): AdvisedCall[] {
    const prices = stylePrices(style);
    return [...this.callsBySession].flatMap(([sessionId, calls]) =>
      calls.map(({ atMs, observation, output, tokensAfterBreak }) => ({
        sessionId,
        model: PROVIDER_STYLES[style].model,
        calledAtMs: atMs,
        promptTokens: observation.promptTokens,
        cachedTokens: observation.cachedTokens,
        completionTokens: output,
        cacheCreationTokens: observation.promptTokens - observation.cachedTokens,
        cacheCreation1hTokens: 0,
        cost: writePricedCost(observation, output, prices, "5m"),
        ...(tokensAfterBreak === undefined ? {} : { tokensAfterBreak }),
      })),
    );
  }

  result(): WritePricedResult {
    const styleResult = (style: ProviderStyle): StyleResult => {
      const cost: Partial<Record<Retention, number>> = {};
      const cachedShare: Partial<Record<Retention, number>> = {};
      for (const retention of PROVIDER_STYLES[style].retentions) {
        cost[retention] = this.costs.get(`${style}/${retention}`) ?? 0;
        const tokens = this.tokens.get(`${style}/${retention}`);
        cachedShare[retention] = tokens !== undefined && tokens.prompt > 0 ? tokens.cached / tokens.prompt : 0;
      }
      const prices = stylePrices(style);
      const advice = adviseRetention(this.advisedCalls(style), () => prices);
      const estimated: Partial<Record<Retention, number>> = {};
      for (const r of advice.retentions) if (r.offered) estimated[r.retention] = r.cost;
      return {
        model: PROVIDER_STYLES[style].model,
        cost,
        cachedShare,
        advisor: { recommended: advice.cheapest, savingVsDefault: advice.savingVsDefault, estimated },
      };
    };
    return { anthropic: styleResult("anthropic"), openai: styleResult("openai") };
  }
}
