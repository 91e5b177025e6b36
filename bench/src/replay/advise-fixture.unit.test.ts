// The retention advisor on recorded replay data (fixtures/replay-calls.json, written by
// record-advise-fixture.ts: the quick workload, stabilised, as a 5-minute provider reported it),
// priced as an Anthropic-style and an OpenAI-style provider would bill it, and printed by prefixctl.
// Then against the simulation itself (fixtures/replay-naive-calls.json: the naive run, with what the
// longer-lived caches served), as the bench's advisor check compares them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type AdvisedCall, adviseRetention, RETENTIONS } from "@prefix-guard/cache-monitor";
import { formatAdvice } from "@prefix-guard/prefixctl";
import { describe, expect, it } from "vitest";
import {
  advisorEstimateError,
  PROVIDER_STYLES,
  type ProviderStyle,
  simulatedCheapest,
  stylePrices,
  WritePricedTally,
  writePricedCost,
} from "./write-prices";

interface RecordedCall {
  readonly sessionId: string;
  readonly atMs: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly outputTokens: number;
}

const recorded = (
  JSON.parse(readFileSync(join(import.meta.dirname, "fixtures", "replay-calls.json"), "utf8")) as {
    calls: RecordedCall[];
  }
).calls;

/** The calls session by session, each in call order, as cache-monitor hands them to the advisor. */
function advisedCalls(style: ProviderStyle): AdvisedCall[] {
  const bySession = new Map<string, RecordedCall[]>();
  for (const call of recorded) bySession.set(call.sessionId, [...(bySession.get(call.sessionId) ?? []), call]);
  const prices = stylePrices(style);
  return [...bySession].flatMap(([sessionId, calls]) =>
    calls.map((call) => {
      const observation = { ...call, optimumCachedTokens: call.cachedTokens, ttlExpired: false };
      return {
        sessionId,
        model: PROVIDER_STYLES[style].model,
        calledAtMs: call.atMs,
        promptTokens: call.promptTokens,
        cachedTokens: call.cachedTokens,
        completionTokens: call.outputTokens,
        cacheCreationTokens: call.promptTokens - call.cachedTokens,
        cacheCreation1hTokens: 0,
        cost: writePricedCost(observation, call.outputTokens, prices, "5m"),
      };
    }),
  );
}

/** Calls that missed after an idle gap longer than 5 minutes and at most `ttlMs`: the ones a longer retention turns into hits. */
function expiriesWithin(ttlMs: number): number {
  let count = 0;
  const previousAt = new Map<string, number>();
  for (const call of recorded) {
    const before = previousAt.get(call.sessionId);
    previousAt.set(call.sessionId, call.atMs);
    if (before === undefined || call.cachedTokens > 0.05 * call.promptTokens) continue;
    const gap = call.atMs - before;
    if (gap > 5 * 60_000 && gap <= ttlMs) count += 1;
  }
  return count;
}

describe("the retention advisor on the recorded replay", () => {
  it("is a replay with idle gaps: some calls missed after more than 5 minutes", () => {
    expect(recorded.length).toBeGreaterThan(150);
    expect(expiriesWithin(3_600_000)).toBeGreaterThan(5);
  });

  for (const style of ["anthropic", "openai"] as const) {
    it(`${style}-style: turns exactly the expiries within each retention into hits, and reprices 5m as recorded`, () => {
      const calls = advisedCalls(style);
      const advice = adviseRetention(calls, () => stylePrices(style));
      const hits = (retention: string) => advice.retentions.find((r) => r.retention === retention)?.hits ?? 0;
      expect(hits("1h") - hits("5m")).toBe(expiriesWithin(3_600_000));
      expect(hits("24h") - hits("5m")).toBe(expiriesWithin(24 * 3_600_000));
      // The advisor's 5m price is the bench's own write-priced cost of what was recorded.
      expect(advice.retentions[0]?.cost).toBeCloseTo(advice.recordedCost, 9);
      const offered = advice.retentions.filter((r) => r.offered).map((r) => r.retention);
      expect(offered).toEqual(
        RETENTIONS.filter((r) => (PROVIDER_STYLES[style].retentions as readonly string[]).includes(r)),
      );
    });
  }

  it("Anthropic-style: keeps 5m, the 1h write premium costing more than its extra hits save", () => {
    const advice = adviseRetention(advisedCalls("anthropic"), () => stylePrices("anthropic"));
    expect(advice.cheapest).toBe("5m");
    expect(advice.savingVsNext).toBeGreaterThan(0);
  });

  it("OpenAI-style: recommends 24h, writes costing no more than input, and prefixctl prints it", () => {
    const advice = adviseRetention(advisedCalls("openai"), () => stylePrices("openai"));
    expect(advice.cheapest).toBe("24h");
    const [fiveMinutes, , day] = advice.retentions;
    expect(advice.savingVsDefault).toBeCloseTo((fiveMinutes?.cost ?? 0) - (day?.cost ?? 0), 9);
    const text = formatAdvice({
      sessionId: "(all sessions of the replay)",
      defaultRetention: advice.defaultRetention,
      calls: advice.calls,
      currency: "USD",
      recordedCost: advice.recordedCost,
      retentions: advice.retentions.map((r) => ({ ...r })),
      recommended: advice.cheapest ?? "",
      savingVsDefault: advice.savingVsDefault,
      savingVsNext: advice.savingVsNext,
      workspace: "",
      sessions: 1,
    });
    expect(text).toContain(
      `Use 24h retention: it would have cost ${advice.savingVsDefault.toFixed(4)} USD less than the 5m default.`,
    );
  });
});

interface RecordedNaiveCall extends RecordedCall {
  readonly cachedTokens1h: number;
  readonly cachedTokens24h: number;
  readonly tokensAfterBreak?: number;
}

describe("the retention advisor against the simulated caches (naive replay: prefixes change during idle gaps)", () => {
  const naive = (
    JSON.parse(readFileSync(join(import.meta.dirname, "fixtures", "replay-naive-calls.json"), "utf8")) as {
      calls: RecordedNaiveCall[];
    }
  ).calls;
  const tally = new WritePricedTally();
  for (const call of naive) {
    const served = (cachedTokens: number) => ({
      promptTokens: call.promptTokens,
      cachedTokens,
      optimumCachedTokens: cachedTokens,
      ttlExpired: false,
    });
    tally.add(
      call.sessionId,
      call.atMs,
      { "5m": served(call.cachedTokens), "1h": served(call.cachedTokens1h), "24h": served(call.cachedTokens24h) },
      call.outputTokens,
      call.tokensAfterBreak,
    );
  }
  const result = tally.result();

  it("has expiries whose prefix changed during the gap: the longer caches read them only up to the break", () => {
    const previousAt = new Map<string, number>();
    const changedExpiries = naive.filter((call) => {
      const before = previousAt.get(call.sessionId);
      previousAt.set(call.sessionId, call.atMs);
      return before !== undefined && call.atMs - before > 5 * 60_000 && call.tokensAfterBreak !== undefined;
    });
    expect(changedExpiries.length).toBeGreaterThan(3);
    for (const call of changedExpiries) {
      expect(call.cachedTokens1h).toBeLessThanOrEqual(call.promptTokens - (call.tokensAfterBreak ?? 0));
    }
  });

  for (const style of ["anthropic", "openai"] as const) {
    it(`${style}-style: recommends what the simulation priced cheapest, estimating each retention as it did`, () => {
      expect(result[style].advisor.recommended).toBe(simulatedCheapest(result[style]));
      expect(advisorEstimateError(result[style])).toBeLessThan(0.001);
    });
  }
});
