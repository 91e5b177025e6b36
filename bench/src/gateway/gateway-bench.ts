// The gateway bench (docs/decisions/gateway-speed-goals.md): the same fake upstream called directly, through a bare
// pass-through proxy (the floor) and through the gateway in observe mode (its own main, publishing
// events), in one run, each in its own process: latency at concurrency 1 interleaved call by call,
// then throughput at concurrency 32 in rounds that alternate the order of the setups. Bodies of
// 85 KiB, JSON answers and streams, to OpenAI Chat and Anthropic Messages.
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { throughput } from "../speed/measure";
import { type BenchProcess, freePort, killStale, startNode } from "../speed/procs";
import { counterTotal, histogramTotals, quantiles } from "../speed/report";
import { freshDatabase } from "../speed/stack";
import { progress } from "../stats";
import { BENCH_ROUTES, type BenchRoute, ROUTE_HEADERS, ROUTE_PATHS, requestBody, turnBodies } from "./bodies";
import { type Answer, BenchClient } from "./client";
import { expectedClientBytes } from "./fake-responses";
import {
  type BenchCase,
  caseLabel,
  type GatewayBenchResult,
  type GoalVerdict,
  judgeGoals,
  type LatencyCase,
  mergeWindows,
  SETUP_LABELS,
  SETUPS,
  type Setup,
  type ThroughputCase,
  type ThroughputWindow,
} from "./gateway-report";

export const BODY_BYTES = 85 * 1024;

export interface GatewayBenchOptions {
  readonly repo: string;
  readonly quick: boolean;
  /** The bench broker for the gateway's bus; undefined: the embedded transport on a scratch SQLite file. */
  readonly kafkaBrokers: string | undefined;
  /** The bench broker's process, whose CPU each throughput window reads; undefined: not read. */
  readonly brokerPid?: number | undefined;
}

interface Plan {
  /** Calls of each case through each setup at concurrency 1 (after the warm-up). */
  readonly latencyCalls: number;
  readonly warmupCalls: number;
  readonly concurrency: number;
  /** One throughput window; each case gets `rounds` windows per setup. */
  readonly windowMs: number;
  readonly rounds: number;
}

const plans: Record<"quick" | "full", Plan> = {
  quick: { latencyCalls: 200, warmupCalls: 50, concurrency: 32, windowMs: 1_500, rounds: 1 },
  full: { latencyCalls: 1_500, warmupCalls: 200, concurrency: 32, windowMs: 3_500, rounds: 2 },
};

export interface GatewayBenchRun extends GatewayBenchResult {
  readonly plan: Plan;
  readonly machine: {
    readonly cpus: number;
    readonly cpuModel: string;
    readonly loadAverageAtStart: readonly number[];
    readonly loadAverageAtEnd: readonly number[];
  };
  /** Whether each setup answered each case with the bytes a client must get (checked before timing). */
  readonly transparent: Readonly<Record<string, boolean>>;
  /** The gateway's prefixguard_gateway_* counters after the run (what it observed, what not). */
  readonly gatewayCounters: readonly string[];
  readonly seconds: number;
}

const CASES: readonly BenchCase[] = BENCH_ROUTES.flatMap((route) => [
  { route, stream: false },
  { route, stream: true },
]);

export async function runGatewayBench(options: GatewayBenchOptions): Promise<GatewayBenchRun> {
  const plan = options.quick ? plans.quick : plans.full;
  const started = performance.now();
  const loadAverageAtStart = loadavg().map((l) => Number(l.toFixed(2)));
  progress(`gateway: load average ${loadAverageAtStart.join(" ")} on ${cpus().length} cores`);
  killStale(options.repo);
  const bodies = new Map(CASES.map((c) => [key(c), requestBody(c.route, BODY_BYTES, c.stream)] as const));
  const turns = new Map(CASES.map((c) => [key(c), turnBodies(bodies.get(key(c)) as Buffer)] as const));
  /** Every call of the run sends a body no call sent before (see turnBodies). */
  let calls = 0;
  const processes: BenchProcess[] = [];
  const scratch = mkdtempSync(join(tmpdir(), "bench-gateway-"));
  const clients = new Map<Setup, BenchClient>();
  try {
    const upstreamPort = await freePort();
    const upstream = await startNode({
      repo: options.repo,
      name: "gateway-bench-upstream",
      cwd: options.repo,
      script: "bench/src/gateway/fake-upstream.ts",
      env: { FAKE_UPSTREAM_PORT: String(upstreamPort) },
      port: upstreamPort,
    });
    processes.push(upstream);
    const barePort = await freePort();
    const bare = await startNode({
      repo: options.repo,
      name: "gateway-bench-bare-proxy",
      cwd: options.repo,
      script: "bench/src/gateway/bare-proxy.ts",
      env: { BARE_PROXY_PORT: String(barePort), UPSTREAM_PORT: String(upstreamPort) },
      port: barePort,
    });
    processes.push(bare);
    const gatewayPort = await freePort();
    const metricsPort = await freePort();
    const upstreamUrl = `http://127.0.0.1:${upstreamPort}`;
    const gateway = await startNode({
      repo: options.repo,
      name: "gateway-bench-gateway",
      cwd: options.repo,
      // BENCH_GATEWAY_ENTRY: another entry (a variant of the gateway, to profile) against the same floor.
      script: process.env["BENCH_GATEWAY_ENTRY"] || "services/gateway/src/main.ts",
      env: {
        GATEWAY_PORT: String(gatewayPort),
        METRICS_PORT: String(metricsPort),
        GATEWAY_MODE: "observe",
        OPENAI_UPSTREAM_URL: upstreamUrl,
        ANTHROPIC_UPSTREAM_URL: upstreamUrl,
        // Its observations' outbox (MariaDB, as deployed), relayed to the bus below: with both the
        // gateway's main publishes events, so the run measures observe mode as it ships.
        DATABASE_URL: await gatewayDatabase(scratch),
        ...(options.kafkaBrokers === undefined
          ? { TRANSPORT: "embedded", BUS_DATABASE_URL: `sqlite:${join(scratch, "bus.sqlite")}` }
          : { TRANSPORT: "kafka", KAFKA_BROKERS: options.kafkaBrokers }),
      },
      port: gatewayPort,
      timeoutMs: 120_000,
    });
    processes.push(gateway);
    const ports: Record<Setup, number> = { direct: upstreamPort, bare_proxy: barePort, gateway: gatewayPort };
    const pids: Record<Setup, number | undefined> = { direct: undefined, bare_proxy: bare.pid, gateway: gateway.pid };
    for (const setup of SETUPS) clients.set(setup, new BenchClient(setup, ports[setup], plan.concurrency));
    const call = (setup: Setup, c: BenchCase, keepBody = false): Promise<Answer> => {
      const client = clients.get(setup) as BenchClient;
      const body = (turns.get(key(c)) as (call: number) => Buffer)(++calls);
      return client.post(ROUTE_PATHS[c.route], ROUTE_HEADERS[c.route], body, keepBody);
    };
    const ok = async (setup: Setup, c: BenchCase): Promise<Answer> => {
      const answer = await call(setup, c);
      if (answer.status !== 200)
        throw new Error(`${SETUP_LABELS[setup]} answered ${caseLabel(c)} with ${answer.status}`);
      return answer;
    };

    progress("gateway: checking each setup answers each case with the bytes a client must get");
    const transparent: Record<string, boolean> = {};
    for (const c of CASES)
      for (const setup of SETUPS) {
        const answer = await call(setup, c, true);
        const same = answer.status === 200 && (answer.body?.equals(expectedClientBytes(c.route, c.stream)) ?? false);
        transparent[`${SETUP_LABELS[setup]}: ${caseLabel(c)}`] = same;
        if (!same)
          progress(
            `gateway: WARNING ${SETUP_LABELS[setup]} answered ${caseLabel(c)} with status ${answer.status}, other bytes`,
          );
      }

    progress(`gateway: warm-up, ${plan.warmupCalls} calls of each case through each setup`);
    for (let i = 0; i < plan.warmupCalls; i++) for (const c of CASES) for (const setup of SETUPS) await ok(setup, c);

    const latency = (await measureLatency(plan, ok)).map((c) => ({ ...c, bodyBytes: bodies.get(key(c))?.length ?? 0 }));

    const throughputCases: ThroughputCase[] = [];
    for (const c of CASES) {
      const windows: Record<Setup, ThroughputWindow[]> = { direct: [], bare_proxy: [], gateway: [] };
      for (let round = 0; round < plan.rounds; round++) {
        // Alternate the order, so drift in the machine's speed does not favour one setup.
        const order = round % 2 === 0 ? SETUPS : [...SETUPS].reverse();
        for (const setup of order) {
          progress(
            `gateway: throughput ${caseLabel(c)}, ${SETUP_LABELS[setup]}, concurrency ${plan.concurrency}, ${plan.windowMs / 1000} s (round ${round + 1}/${plan.rounds})`,
          );
          const result = await throughput(() => ok(setup, c), plan.concurrency, plan.windowMs, {
            client: process.pid,
            proxy: pids[setup],
            // The proxy's event loop alone: what one proxy can serve when its observation (a thread
            // of its own) and its GC have other cores.
            proxy_thread: pids[setup],
            upstream: upstream.pid,
            broker: options.brokerPid,
          });
          if (result.errors > 0) progress(`gateway: ${result.errors} calls failed`);
          windows[setup].push(result);
        }
      }
      throughputCases.push({
        ...c,
        concurrency: plan.concurrency,
        bySetup: {
          direct: mergeWindows(windows.direct),
          bare_proxy: mergeWindows(windows.bare_proxy),
          gateway: mergeWindows(windows.gateway),
        },
      });
    }
    const exposition = await scrape(metricsPort);
    const held = histogramTotals(exposition, "prefixguard_gateway_added_latency_seconds", "route");
    const heldMsByRoute = Object.fromEntries(
      [...held].map(([route, t]) => [route, t.count > 0 ? (t.sum * 1000) / t.count : Number.NaN]),
    );
    // Counters and histogram totals that moved (the buckets would only repeat them).
    const gatewayCounters = exposition
      .split("\n")
      .filter((line) => line.startsWith("prefixguard_gateway_") && !line.endsWith(" 0") && !line.includes("_bucket{"));
    const unobserved = counterTotal(exposition, "prefixguard_gateway_unobserved_total");
    const published = {
      straight: counterTotal(exposition, "prefixguard_gateway_events_published_total"),
      throughOutbox: counterTotal(exposition, "prefixguard_relay_events_published_total"),
    };
    const goals: GoalVerdict[] = judgeGoals(latency, throughputCases, unobserved);
    const bodyBytes = Object.fromEntries(
      BENCH_ROUTES.map((route) => [route, bodies.get(key({ route, stream: false }))?.length ?? 0]),
    ) as Record<BenchRoute, number>;
    return {
      quick: options.quick,
      plan,
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? "unknown",
        loadAverageAtStart,
        loadAverageAtEnd: loadavg().map((l) => Number(l.toFixed(2))),
      },
      bodyBytes,
      transparent,
      latency,
      throughput: throughputCases,
      goals,
      gatewayCounters,
      heldMsByRoute,
      published,
      seconds: Number(((performance.now() - started) / 1000).toFixed(1)),
    };
  } finally {
    for (const client of clients.values()) client.close();
    for (const p of processes.reverse()) await p.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

function key(c: BenchCase): string {
  return `${c.route}:${c.stream}`;
}

/**
 * Every case through every setup, call after call, the setup that goes first rotating each round:
 * noise from the rest of the machine lands on all three alike.
 */
async function measureLatency(
  plan: Plan,
  ok: (setup: Setup, c: BenchCase) => Promise<Answer>,
): Promise<Omit<LatencyCase, "bodyBytes">[]> {
  const samples = new Map(
    CASES.map((c) => [
      key(c),
      Object.fromEntries(SETUPS.map((s) => [s, { total: [] as number[], ttfb: [] as number[] }])),
    ]),
  );
  progress(`gateway: latency, ${plan.latencyCalls} calls of each of ${CASES.length} cases through each setup`);
  const step = Math.max(1, Math.floor(plan.latencyCalls / 5));
  for (let i = 0; i < plan.latencyCalls; i++) {
    if (i > 0 && i % step === 0) progress(`gateway: latency ${i}/${plan.latencyCalls}`);
    for (const c of CASES)
      for (let k = 0; k < SETUPS.length; k++) {
        const setup = SETUPS[(i + k) % SETUPS.length] as Setup;
        const answer = await ok(setup, c);
        const into = samples.get(key(c))?.[setup];
        into?.total.push(answer.totalMs);
        into?.ttfb.push(answer.ttfbMs);
      }
  }
  return CASES.map((c) => {
    const bySetup = samples.get(key(c)) ?? {};
    const of = (pick: "total" | "ttfb") =>
      Object.fromEntries(SETUPS.map((s) => [s, quantiles(bySetup[s]?.[pick] ?? [])])) as LatencyCase["total"];
    return { ...c, total: of("total"), ttfb: of("ttfb") };
  });
}

/** A fresh MariaDB database for the gateway (as deployed); a scratch SQLite file when there is none. */
async function gatewayDatabase(scratch: string): Promise<string> {
  try {
    return await freshDatabase("bench_gateway");
  } catch (error) {
    progress(`gateway: no MariaDB (${error instanceof Error ? error.message : String(error)}): SQLite instead`);
    return `sqlite:${join(scratch, "gateway.sqlite")}`;
  }
}

async function scrape(metricsPort: number): Promise<string> {
  try {
    return await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  } catch {
    return "";
  }
}
