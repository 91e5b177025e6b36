// Pure helpers of the gateway bench: added latency over the direct call, throughput rounds merged,
// the goals of docs/decisions/gateway-speed-goals.md judged PASS/FAIL, and the markdown written to
// bench/results/gateway.md.
import { fmt, markdownTable, type Quantiles } from "../speed/report";
import type { BenchRoute } from "./bodies";

export type Setup = "direct" | "bare_proxy" | "gateway";
export const SETUPS: readonly Setup[] = ["direct", "bare_proxy", "gateway"];
export const SETUP_LABELS: Readonly<Record<Setup, string>> = {
  direct: "direct",
  bare_proxy: "bare proxy",
  gateway: "gateway",
};

export interface BenchCase {
  readonly route: BenchRoute;
  readonly stream: boolean;
}

export function caseLabel(c: BenchCase): string {
  return `${c.route}, ${c.stream ? "streaming" : "JSON"}`;
}

export interface LatencyCase extends BenchCase {
  readonly bodyBytes: number;
  /** To the end of the response. */
  readonly total: Readonly<Record<Setup, Quantiles>>;
  /** To the first byte of the response body. */
  readonly ttfb: Readonly<Record<Setup, Quantiles>>;
}

/** One throughput window (a subset of speed/measure's ThroughputResult). */
export interface ThroughputWindow extends Quantiles {
  readonly perSecond: number;
  readonly errors: number;
  readonly cpu: Readonly<Record<string, number>>;
}

export interface ThroughputCase extends BenchCase {
  readonly concurrency: number;
  readonly bySetup: Readonly<Record<Setup, ThroughputWindow>>;
}

export interface Added {
  readonly p50: number;
  readonly p99: number;
}

/** What `other` adds to `direct`, quantile by quantile (ms). */
export function addedOver(direct: Quantiles, other: Quantiles): Added {
  return { p50: other.p50 - direct.p50, p99: other.p99 - direct.p99 };
}

/**
 * The latency a caller waits for before it can act: the whole JSON answer, or the first byte of a
 * stream (a stream's end is the model's pace, not the proxy's).
 */
export function waitedFor(c: LatencyCase, setup: Setup): Quantiles {
  return c.stream ? c.ttfb[setup] : c.total[setup];
}

/** Windows of the same setup from several rounds, as one: rates, CPU and quantiles averaged, errors summed. */
export function mergeWindows(windows: readonly ThroughputWindow[]): ThroughputWindow {
  const mean = (pick: (w: ThroughputWindow) => number) =>
    windows.length === 0 ? Number.NaN : windows.reduce((sum, w) => sum + pick(w), 0) / windows.length;
  const cpuKeys = [...new Set(windows.flatMap((w) => Object.keys(w.cpu)))];
  return {
    n: windows.reduce((sum, w) => sum + w.n, 0),
    p50: mean((w) => w.p50),
    p99: mean((w) => w.p99),
    mean: mean((w) => w.mean),
    perSecond: Number(mean((w) => w.perSecond).toFixed(1)),
    errors: windows.reduce((sum, w) => sum + w.errors, 0),
    cpu: Object.fromEntries(cpuKeys.map((key) => [key, Number(mean((w) => w.cpu[key] ?? Number.NaN).toFixed(1))])),
  };
}

/**
 * CPU time one request costs a process (ms), from its share of a core over a throughput window:
 * what "throughput per process" comes to once the machine, not the process, is the limit.
 */
export function cpuMsPerRequest(window: ThroughputWindow, process: string): number {
  const share = window.cpu[process];
  if (share === undefined || !(window.perSecond > 0)) return Number.NaN;
  return (share * 10) / window.perSecond;
}

/** The proxy thread's CPU ms per request, bare proxy; gateway ("–" for results without it). */
function threadCell(c: ThroughputCase): string {
  const bare = cpuMsPerRequest(c.bySetup.bare_proxy, "proxy_thread");
  const gateway = cpuMsPerRequest(c.bySetup.gateway, "proxy_thread");
  return Number.isFinite(bare) && Number.isFinite(gateway) ? `${fmt(bare, 2)}; **${fmt(gateway, 2)}**` : "–";
}

/**
 * The broker's CPU ms per gateway request: what it spent in the gateway's windows beyond its rate in
 * the bare proxy's (where nothing is published), over the gateway's rate. The broker shares the
 * machine's cores with the rest, so this is part of a gateway request's cost here. NaN without the
 * broker's figures (a run on the embedded transport).
 */
export function brokerMsPerGatewayRequest(c: ThroughputCase): number {
  const working = c.bySetup.gateway.cpu["broker"];
  const idle = c.bySetup.bare_proxy.cpu["broker"];
  if (working === undefined || idle === undefined) return Number.NaN;
  return cpuMsPerRequest({ ...c.bySetup.gateway, cpu: { broker: working - idle } }, "broker");
}

/**
 * The rate a gateway's proxy thread allows, as a share of the bare proxy's thread's: bare CPU ms per
 * request over the gateway's (NaN without per-thread figures).
 */
export function proxyThreadCeiling(c: ThroughputCase): number {
  return cpuMsPerRequest(c.bySetup.bare_proxy, "proxy_thread") / cpuMsPerRequest(c.bySetup.gateway, "proxy_thread");
}

export const GOALS = {
  addedP50Ms: 0.5,
  addedP99Ms: 2,
  ttfbP99OverBareMs: 1,
  throughputShareOfBare: 0.7,
} as const;

export interface GoalVerdict {
  readonly goal: string;
  /** Each case's figure, in the goal's unit. */
  readonly measured: readonly { readonly case: string; readonly value: number }[];
  /** The figure closest to failing (the largest, or for throughput the smallest). */
  readonly worst: number;
  readonly pass: boolean;
}

function verdict(
  goal: string,
  measured: readonly { case: string; value: number }[],
  ok: (value: number) => boolean,
  higherIsBetter: boolean,
): GoalVerdict {
  const values = measured.map((m) => m.value);
  const worst = values.length === 0 ? Number.NaN : higherIsBetter ? Math.min(...values) : Math.max(...values);
  // No figure, or a NaN one, is no pass.
  return { goal, measured, worst, pass: values.length > 0 && values.every((v) => Number.isFinite(v) && ok(v)) };
}

/**
 * The goals of docs/decisions/gateway-speed-goals.md, the last being that every exchange was
 * observed, each over every case it applies to: a goal passes when every case does.
 */
export function judgeGoals(
  latency: readonly LatencyCase[],
  throughput: readonly ThroughputCase[],
  /** prefixguard_gateway_unobserved_total over every reason after the run. */
  unobserved: number,
): GoalVerdict[] {
  const added = latency.map((c) => ({
    case: caseLabel(c),
    added: addedOver(waitedFor(c, "direct"), waitedFor(c, "gateway")),
  }));
  const streams = latency.filter((c) => c.stream);
  return [
    verdict(
      `added latency p50 ≤ ${GOALS.addedP50Ms} ms over direct (ms)`,
      added.map((a) => ({ case: a.case, value: a.added.p50 })),
      (v) => v <= GOALS.addedP50Ms,
      false,
    ),
    verdict(
      `added latency p99 ≤ ${GOALS.addedP99Ms} ms over direct (ms)`,
      added.map((a) => ({ case: a.case, value: a.added.p99 })),
      (v) => v <= GOALS.addedP99Ms,
      false,
    ),
    verdict(
      `streaming TTFB p99 ≤ bare proxy's + ${GOALS.ttfbP99OverBareMs} ms (ms over it)`,
      streams.map((c) => ({ case: caseLabel(c), value: c.ttfb.gateway.p99 - c.ttfb.bare_proxy.p99 })),
      (v) => v <= GOALS.ttfbP99OverBareMs,
      false,
    ),
    verdict(
      `throughput ≥ ${GOALS.throughputShareOfBare * 100}% of the bare proxy's (%)`,
      throughput.map((c) => ({
        case: `${caseLabel(c)}, concurrency ${c.concurrency}`,
        value: (100 * c.bySetup.gateway.perSecond) / c.bySetup.bare_proxy.perSecond,
      })),
      (v) => v >= GOALS.throughputShareOfBare * 100,
      true,
    ),
    // A gateway that sheds its observations under load would be fast for nothing: the figures above
    // count only when every exchange was observed.
    verdict(
      "every exchange observed (exchanges unobserved)",
      [{ case: "whole run", value: unobserved }],
      (v) => v === 0,
      false,
    ),
  ];
}

/** One line per goal, for stdout. */
export function goalLines(verdicts: readonly GoalVerdict[]): string[] {
  return verdicts.map(
    (v) =>
      `${v.pass ? "PASS" : "FAIL"}  ${v.goal}: ${v.measured.map((m) => `${m.case} ${fmt(m.value, 2)}`).join("; ")}`,
  );
}

export interface GatewayBenchResult {
  readonly quick: boolean;
  readonly bodyBytes: Readonly<Record<BenchRoute, number>>;
  readonly latency: readonly LatencyCase[];
  readonly throughput: readonly ThroughputCase[];
  readonly goals: readonly GoalVerdict[];
  /**
   * The gateway's own prefixguard_gateway_added_latency_seconds over the run, mean ms per route:
   * its time between reading a body and forwarding it, without waiting for the event loop.
   */
  readonly heldMsByRoute: Readonly<Record<string, number>>;
  /**
   * Events the gateway published straight to the bus, and through its outbox (a publish the bus
   * refused or that overran its deadline switches to it): with the broker up, the outbox is a sign
   * of trouble (older results do not have it).
   */
  readonly published?: { readonly straight: number; readonly throughOutbox: number };
}

const pair = (q: Quantiles) => `${fmt(q.p50, 2)} / ${fmt(q.p99, 2)}`;
const signed = (value: number) => `${value >= 0 ? "+" : ""}${fmt(value, 2)}`;
const addedPair = (a: Added) => `${signed(a.p50)} / ${signed(a.p99)}`;

export function renderGatewayMarkdown(result: GatewayBenchResult, measuredAt: string, machine: string): string {
  const latencyRows = result.latency.map((c) => {
    const direct = waitedFor(c, "direct");
    return [
      `${caseLabel(c)} (${c.stream ? "first byte" : "whole answer"})`,
      pair(direct),
      `${pair(waitedFor(c, "bare_proxy"))} (${addedPair(addedOver(direct, waitedFor(c, "bare_proxy")))})`,
      `**${pair(waitedFor(c, "gateway"))} (${addedPair(addedOver(direct, waitedFor(c, "gateway")))})**`,
    ];
  });
  const streamRows = result.latency
    .filter((c) => c.stream)
    .map((c) => [caseLabel(c), pair(c.total.direct), pair(c.total.bare_proxy), pair(c.total.gateway)]);
  const throughputRows = result.throughput.map((c) => {
    const cpu = (setup: Setup) => {
      const shares = c.bySetup[setup].cpu;
      return `${fmt(shares["proxy"], 0)}% / ${fmt(shares["upstream"], 0)}% / ${fmt(shares["client"], 0)}%`;
    };
    return [
      `${caseLabel(c)}, concurrency ${c.concurrency}`,
      fmt(c.bySetup.direct.perSecond, 0),
      fmt(c.bySetup.bare_proxy.perSecond, 0),
      `**${fmt(c.bySetup.gateway.perSecond, 0)}** (${fmt((100 * c.bySetup.gateway.perSecond) / c.bySetup.bare_proxy.perSecond, 0)}%)`,
      `${cpu("bare_proxy")}; ${cpu("gateway")}`,
      `${fmt(cpuMsPerRequest(c.bySetup.bare_proxy, "proxy"), 2)}; **${fmt(cpuMsPerRequest(c.bySetup.gateway, "proxy"), 2)}**`,
      threadCell(c),
      fmt(brokerMsPerGatewayRequest(c), 2),
    ];
  });
  const ceilings = result.throughput
    .map((c) => ({ label: caseLabel(c), share: proxyThreadCeiling(c) }))
    .filter((c) => Number.isFinite(c.share));
  const bodies = Object.entries(result.bodyBytes)
    .map(([route, bytes]) => `${route} ${(bytes / 1024).toFixed(1)} KiB`)
    .join(", ");
  return [
    `# Gateway speed (${measuredAt}${result.quick ? ", --quick" : ""})`,
    "",
    `${machine}. Request bodies: ${bodies}. The fake upstream, the bare proxy, the gateway (observe mode) and the load generator each run as their own process; every case is measured against all three setups in the same run, call by call.`,
    "",
    "## Latency at concurrency 1, ms p50 / p99 (added over direct)",
    "",
    markdownTable(["case", "direct", "bare proxy", "gateway"], latencyRows),
    "",
    "Streams to their end (the fake sends the first event, then the rest on the next turn of its loop):",
    "",
    markdownTable(["case", "direct", "bare proxy", "gateway"], streamRows),
    "",
    "## Throughput, requests/s (CPU of proxy / fake upstream / load generator, % of one core: bare proxy; gateway)",
    "",
    markdownTable(
      [
        "case",
        "direct",
        "bare proxy",
        "gateway (% of bare)",
        "CPU",
        "CPU ms per request: bare proxy; gateway",
        "of it, the proxy thread's",
        "the broker's, per gateway request",
      ],
      throughputRows,
    ),
    "",
    "The broker's column is the Kafka broker's CPU in the gateway's windows beyond its rate in the bare proxy's (nothing is published there), per gateway request: it runs on the same cores, so it is part of what a gateway request costs this machine.",
    "",
    ...(ceilings.length === 0
      ? []
      : [
          `A proxy's event loop is one thread; the gateway's observation runs on another, and both share GC threads. On a machine where those have cores of their own (2 cores here run the load generator and the fake upstream too), one gateway would serve as many requests as its proxy thread's CPU per request allows, against the bare proxy's thread: ${ceilings
            .map((c) => `${c.label} ${fmt(100 * c.share, 0)}%`)
            .join(", ")}. The goal is judged on the measured rates above, not on this.`,
          "",
        ]),
    `The gateway's own histogram of the time it holds a request between reading its body and forwarding it, mean over the run: ${
      Object.entries(result.heldMsByRoute)
        .map(([route, ms]) => `${route} ${fmt(ms * 1000, 0)} µs`)
        .join(", ") || "–"
    }. What a caller waits for beyond that is the proxy's event loop busy with other exchanges (the observation runs on a thread of its own).`,
    "",
    ...(result.published === undefined
      ? []
      : [
          `Events published straight to Kafka: ${result.published.straight}; through the gateway's outbox (after a publish was refused or overran its deadline): ${result.published.throughOutbox}${result.published.throughOutbox > 0 ? " (**the broker was up: the observation fell behind**)" : ""}.`,
          "",
        ]),
    "## Goals (docs/decisions/gateway-speed-goals.md)",
    "",
    markdownTable(
      ["goal", "worst case", "result"],
      result.goals.map((g) => [g.goal, fmt(g.worst, 2), g.pass ? "PASS" : "**FAIL**"]),
    ),
  ].join("\n");
}
