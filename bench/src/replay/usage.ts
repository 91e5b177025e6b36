// Sums what the simulated provider billed over a run, for one cache TTL: tokens, cost at seed 001's
// prices, the same at the append-only optimum, and how much was still cached right after an
// avoidable prefix change.
import { type CacheObservation, costYuan } from "./provider-cache";

export interface CacheScenario {
  readonly ttlMinutes: number;
  readonly tokens: {
    readonly prompt: number;
    readonly cached: number;
    readonly optimumCached: number;
    readonly output: number;
  };
  readonly cachedShare: number;
  readonly optimumShare: number;
  /** Yuan. `overOptimum` is what cache breaks cost beyond what appending would have. */
  readonly cost: { readonly actual: number; readonly optimum: number; readonly overOptimum: number };
  /** Builds whose previous request of the session had outlived the TTL. */
  readonly ttlExpiredBuilds: number;
  /** Builds with an avoidable change that found a warm cache, and the share of their prompt still cached. */
  readonly afterAvoidableChange: { readonly builds: number; readonly cachedShare: number };
}

function share(part: number, whole: number): number {
  return whole > 0 ? part / whole : 0;
}

export class UsageTally {
  private prompt = 0;
  private cached = 0;
  private optimumCached = 0;
  private output = 0;
  private cost = 0;
  private optimumCost = 0;
  private ttlExpired = 0;
  private readonly afterAvoidable = { builds: 0, prompt: 0, cached: 0 };

  constructor(private readonly ttlMinutes: number) {}

  add(usage: CacheObservation, outputTokens: number, avoidableChange: boolean): void {
    this.prompt += usage.promptTokens;
    this.cached += usage.cachedTokens;
    this.optimumCached += usage.optimumCachedTokens;
    this.output += outputTokens;
    this.cost += costYuan(usage.promptTokens, usage.cachedTokens, outputTokens);
    this.optimumCost += costYuan(usage.promptTokens, usage.optimumCachedTokens, outputTokens);
    if (usage.ttlExpired) this.ttlExpired += 1;
    if (avoidableChange && !usage.ttlExpired) {
      this.afterAvoidable.builds += 1;
      this.afterAvoidable.prompt += usage.promptTokens;
      this.afterAvoidable.cached += usage.cachedTokens;
    }
  }

  result(): CacheScenario {
    return {
      ttlMinutes: this.ttlMinutes,
      tokens: { prompt: this.prompt, cached: this.cached, optimumCached: this.optimumCached, output: this.output },
      cachedShare: share(this.cached, this.prompt),
      optimumShare: share(this.optimumCached, this.prompt),
      cost: { actual: this.cost, optimum: this.optimumCost, overOptimum: this.cost - this.optimumCost },
      ttlExpiredBuilds: this.ttlExpired,
      afterAvoidableChange: {
        builds: this.afterAvoidable.builds,
        cachedShare: share(this.afterAvoidable.cached, this.afterAvoidable.prompt),
      },
    };
  }
}
