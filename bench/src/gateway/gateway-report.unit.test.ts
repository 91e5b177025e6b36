import { describe, expect, it } from "vitest";
import type { Quantiles } from "../speed/report";
import {
  addedOver,
  brokerMsPerGatewayRequest,
  cpuMsPerRequest,
  type GatewayBenchResult,
  GOALS,
  goalLines,
  judgeGoals,
  type LatencyCase,
  mergeWindows,
  proxyThreadCeiling,
  renderGatewayMarkdown,
  type Setup,
  type ThroughputCase,
  type ThroughputWindow,
  waitedFor,
} from "./gateway-report";

const q = (p50: number, p99: number): Quantiles => ({ n: 100, p50, p99, mean: p50 });
const bySetup = <T>(direct: T, bare: T, gateway: T): Record<Setup, T> => ({ direct, bare_proxy: bare, gateway });

function latencyCase(stream: boolean, gateway: { total: Quantiles; ttfb: Quantiles }): LatencyCase {
  return {
    route: "openai_chat",
    stream,
    bodyBytes: 87_000,
    total: bySetup(q(1, 3), q(1.2, 3.5), gateway.total),
    ttfb: bySetup(q(0.5, 2), q(0.7, 2.5), gateway.ttfb),
  };
}

const window = (perSecond: number, cpu: Record<string, number> = {}): ThroughputWindow => ({
  ...q(10, 40),
  perSecond,
  errors: 0,
  cpu,
});

function throughputCase(bare: number, gateway: number): ThroughputCase {
  return {
    route: "anthropic_messages",
    stream: false,
    concurrency: 32,
    bySetup: bySetup(window(3000), window(bare), window(gateway)),
  };
}

/** The report of a run that measured only these throughput cases. */
function throughputMarkdown(throughput: ThroughputCase[]): string {
  const result: GatewayBenchResult = {
    quick: true,
    bodyBytes: { openai_chat: 87_000, anthropic_messages: 86_000 },
    latency: [],
    throughput,
    goals: [],
    heldMsByRoute: {},
  };
  return renderGatewayMarkdown(result, "2026-12-04T10:00:00.000Z", "");
}

describe("gateway bench report", () => {
  it("subtracts the direct call's quantiles, and judges a stream by its first byte and JSON by its end", () => {
    expect(addedOver(q(1, 3), q(1.25, 4.5))).toEqual({ p50: 0.25, p99: 1.5 });
    const json = latencyCase(false, { total: q(9, 9), ttfb: q(8, 8) });
    const stream = latencyCase(true, { total: q(9, 9), ttfb: q(8, 8) });
    expect(waitedFor(json, "gateway").p50).toBe(9);
    expect(waitedFor(stream, "gateway").p50).toBe(8);
  });

  it("merges rounds: rates, quantiles and CPU averaged, counts and errors summed", () => {
    const merged = mergeWindows([
      { ...window(100, { proxy: 50, upstream: 10 }), errors: 1 },
      { ...window(300, { proxy: 70 }), p99: 60, errors: 2 },
    ]);
    expect(merged).toMatchObject({ n: 200, perSecond: 200, p50: 10, p99: 50, errors: 3 });
    // A share missing from a round is no zero: the average is NaN, shown as "–".
    expect(merged.cpu["proxy"]).toBe(60);
    expect(merged.cpu["upstream"]).toBeNaN();
    expect(mergeWindows([]).perSecond).toBeNaN();
  });

  it("turns a process's share of a core at a rate into CPU ms per request", () => {
    // 80% of a core at 400 requests/s: 800 ms of CPU a second over 400 requests.
    expect(cpuMsPerRequest(window(400, { proxy: 80 }), "proxy")).toBeCloseTo(2, 9);
    expect(cpuMsPerRequest(window(400, { proxy: 80 }), "upstream")).toBeNaN();
    expect(cpuMsPerRequest(window(0, { proxy: 80 }), "proxy")).toBeNaN();
  });

  it("sizes a proxy by its event loop's thread: the bare proxy's CPU per request over the gateway's", () => {
    const measured: ThroughputCase = {
      route: "openai_chat",
      stream: true,
      concurrency: 32,
      // Bare: 50% of a core on its thread at 2,000/s (0.25 ms); gateway: 40% at 1,000/s (0.40 ms).
      bySetup: bySetup(window(3000), window(2000, { proxy_thread: 50 }), window(1000, { proxy_thread: 40 })),
    };
    expect(proxyThreadCeiling(measured)).toBeCloseTo(0.625, 9);
    expect(proxyThreadCeiling(throughputCase(1000, 650))).toBeNaN();
    const markdown = throughputMarkdown([measured, throughputCase(1000, 650)]);
    expect(markdown).toContain("| 0.25; **0.40** |");
    // A result without the per-thread figures says so in its cell and leaves it out of the ceiling.
    expect(markdown).toMatch(/\| – \|\n/);
    expect(markdown).toContain("against the bare proxy's thread: openai_chat, streaming 63%.");
  });

  it("charges the gateway's requests with the broker's CPU beyond its rate while nothing is published", () => {
    const measured: ThroughputCase = {
      route: "anthropic_messages",
      stream: true,
      concurrency: 32,
      // The broker idles at 5% of a core in the bare proxy's window and works at 17% in the gateway's, at 1,200/s.
      bySetup: bySetup(window(3000, { broker: 4 }), window(2000, { broker: 5 }), window(1200, { broker: 17 })),
    };
    expect(brokerMsPerGatewayRequest(measured)).toBeCloseTo(0.1, 9);
    expect(brokerMsPerGatewayRequest(throughputCase(1000, 650))).toBeNaN();
    const markdown = throughputMarkdown([measured, throughputCase(1000, 650)]);
    expect(markdown).toContain("the broker's, per gateway request |");
    expect(markdown).toMatch(/\| – \| 0\.10 \|\n/);
    // A run on the embedded transport has no broker: its cell says so.
    expect(markdown).toMatch(/\| – \| – \|\n/);
  });

  it("passes each goal at its limit and fails it just past, over every case it applies to", () => {
    const atLimit = [
      latencyCase(false, { total: q(1 + GOALS.addedP50Ms, 3 + GOALS.addedP99Ms), ttfb: q(0, 0) }),
      // Streams: first byte over direct, and p99 against the bare proxy's 2.5 ms.
      latencyCase(true, { total: q(50, 50), ttfb: q(0.5 + GOALS.addedP50Ms, 2.5 + GOALS.ttfbP99OverBareMs) }),
    ];
    const verdicts = judgeGoals(atLimit, [throughputCase(1000, 700)], 0);
    expect(verdicts.map((v) => v.pass)).toEqual([true, true, true, true, true]);
    expect(verdicts[3]?.worst).toBeCloseTo(70, 9);

    const pastLimit = [
      latencyCase(false, { total: q(1.51, 5.01), ttfb: q(0, 0) }),
      latencyCase(true, { total: q(50, 50), ttfb: q(1, 3.51) }),
    ];
    const failed = judgeGoals(pastLimit, [throughputCase(1000, 800), throughputCase(1000, 699)], 1);
    expect(failed.map((v) => v.pass)).toEqual([false, false, false, false, false]);
    expect(failed[4]?.goal).toBe("every exchange observed (exchanges unobserved)");
    // The worst case is the one named: the largest added latency, the smallest share.
    expect(failed[0]?.worst).toBeCloseTo(0.51, 9);
    expect(failed[3]?.worst).toBeCloseTo(69.9, 9);
    expect(failed[3]?.measured.map((m) => m.value.toFixed(1))).toEqual(["80.0", "69.9"]);
  });

  it("does not pass a goal it has no figure for, or a NaN one", () => {
    const noStreams = judgeGoals([latencyCase(false, { total: q(1, 3), ttfb: q(0, 0) })], [], 0);
    expect(noStreams[2]?.pass).toBe(false);
    expect(noStreams[3]?.pass).toBe(false);
    const nan = judgeGoals([latencyCase(false, { total: q(Number.NaN, 3), ttfb: q(0, 0) })], [], 0);
    expect(nan[0]?.pass).toBe(false);
  });

  it("prints PASS/FAIL per goal and renders the tables with the added figures", () => {
    const latency = [latencyCase(false, { total: q(1.3, 4), ttfb: q(1, 1) })];
    const throughput = [throughputCase(1000, 650)];
    const goals = judgeGoals(latency, throughput, 0);
    const lines = goalLines(goals);
    expect(lines[0]).toBe(`PASS  added latency p50 ≤ ${GOALS.addedP50Ms} ms over direct (ms): openai_chat, JSON 0.30`);
    expect(lines[3]).toMatch(/^FAIL {2}throughput ≥ 70% .*anthropic_messages, JSON, concurrency 32 65\.00$/);
    const result: GatewayBenchResult = {
      quick: true,
      bodyBytes: { openai_chat: 87_000, anthropic_messages: 86_000 },
      latency,
      throughput,
      goals,
      heldMsByRoute: { openai_chat: 0.042 },
    };
    const markdown = renderGatewayMarkdown(result, "2026-12-04T10:00:00.000Z", "Measured on this 2-core machine");
    expect(markdown).toContain(
      "| openai_chat, JSON (whole answer) | 1.00 / 3.00 | 1.20 / 3.50 (+0.20 / +0.50) | **1.30 / 4.00 (+0.30 / +1.00)** |",
    );
    expect(markdown).toContain("**650** (65%)");
    expect(markdown).toContain("| throughput ≥ 70% of the bare proxy's (%) | 65.00 | **FAIL** |");
    expect(markdown).toContain("openai_chat 85.0 KiB");
    expect(markdown).toContain("mean over the run: openai_chat 42 µs.");
    // Results from before the publish counts were kept say nothing about them.
    expect(markdown).not.toContain("Events published");
    const withPublished = (straight: number, throughOutbox: number) =>
      renderGatewayMarkdown({ ...result, published: { straight, throughOutbox } }, "2026-12-04T10:00:00.000Z", "");
    const straight = withPublished(900, 0);
    expect(straight).toContain("Events published straight to Kafka: 900; through the gateway's outbox");
    expect(straight).not.toContain("fell behind");
    const switched = withPublished(600, 300);
    expect(switched).toContain("overran its deadline): 300 (**the broker was up: the observation fell behind**).");
  });
});
