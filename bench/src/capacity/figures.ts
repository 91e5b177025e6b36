// The figures the capacity model takes from one `make bench` run: bench/results/speed.json and
// gateway.json, read as plain JSON (no I/O here). Each figure names the JSON path it came from, and
// a missing or non-numeric one is refused with that path, so a reshaped result file fails loudly
// instead of printing NaN into docs/capacity.md.

/** The processes whose CPU the speed bench samples (bench/src/speed/speed.ts `pids`, less the load generator). */
export const MEASURED_PROCESSES = ["prompt-assembly", "session-events", "rules-snapshot", "mariadbd", "kafka"] as const;
export type MeasuredProcess = (typeof MEASURED_PROCESSES)[number];

/** % of one core per process over a measured window (bench/src/speed/procs.ts cpuWindow). */
export type ProcessCpu = Readonly<Record<MeasuredProcess, number>>;

export interface MeasuredRate {
  /** Operations answered per second in the window. */
  readonly perSecond: number;
  readonly cpu: ProcessCpu;
  /** Where in the result file the figures come from, for the document. */
  readonly source: string;
}

export interface BenchFigures {
  readonly speedRun: { readonly measuredAt: string; readonly commit: string; readonly quick: boolean };
  readonly gatewayRun: { readonly measuredAt: string; readonly quick: boolean };
  /** BuildRequest closed loop at the highest concurrency measured (500-turn sessions, views held). */
  readonly builds: MeasuredRate & { readonly concurrency: number };
  /**
   * The event pipeline (SaveMessage → relay → Kafka → consumers) at the rate it sustains: the
   * claimed rate when the run measured one, else the saturated phase.
   */
  readonly events: MeasuredRate & { readonly phase: "atClaimed" | "saturation" };
  /** Events applied end to end per second with 32 unpaced writers: the most one relay was seen to carry. */
  readonly relayShownPerSecond: number;
  /** prompt-assembly's view cache after one build on each of the pipeline's sessions. */
  readonly viewCache: {
    readonly bytes: number;
    readonly sessions: number;
    readonly meanMessagesPerSession: number;
    readonly budgetBytes: number;
    /** What one build on each session left after a full collection, per 1,000 sessions (measured, heap-probe.ts). */
    readonly retainedPer1000SessionsBytes: number;
  };
  /** The gateway's CPU per forwarded request, on its costliest route (share of a core ÷ requests/s). */
  readonly gateway: { readonly cpuMsPerRequest: number; readonly route: string; readonly concurrency: number };
}

type Json = unknown;

function at(root: Json, path: readonly (string | number)[], file: string): Json {
  let value: Json = root;
  for (const key of path) {
    if (value === null || typeof value !== "object" || !(key in value))
      throw new Error(`${file}: ${path.join(".")} is missing (a result file from another bench version?)`);
    value = (value as Record<string | number, Json>)[key];
  }
  return value;
}

function numberAt(root: Json, path: readonly (string | number)[], file: string): number {
  const value = at(root, path, file);
  if (typeof value !== "number" || !Number.isFinite(value))
    throw new Error(`${file}: ${path.join(".")} is ${JSON.stringify(value)}, expected a finite number`);
  return value;
}

function positiveAt(root: Json, path: readonly (string | number)[], file: string): number {
  const value = numberAt(root, path, file);
  if (value <= 0) throw new Error(`${file}: ${path.join(".")} is ${value}, expected more than 0`);
  return value;
}

function stringAt(root: Json, path: readonly (string | number)[], file: string): string {
  const value = at(root, path, file);
  if (typeof value !== "string") throw new Error(`${file}: ${path.join(".")} is not a string`);
  return value;
}

function cpuAt(root: Json, path: readonly (string | number)[], file: string): ProcessCpu {
  const cpu = {} as Record<MeasuredProcess, number>;
  for (const process of MEASURED_PROCESSES) cpu[process] = numberAt(root, [...path, "cpu", process], file);
  return cpu;
}

const SPEED = "bench/results/speed.json";
const GATEWAY = "bench/results/gateway.json";

/** The figures of one speed run and one gateway run, parsed from their JSON. */
export function benchFigures(speed: Json, gateway: Json): BenchFigures {
  const rows = at(speed, ["after", "throughput"], SPEED);
  if (!Array.isArray(rows) || rows.length === 0) throw new Error(`${SPEED}: after.throughput has no rows`);
  // The highest concurrency: a loaded replica, which is what a fleet sized to a CPU target runs.
  let top = 0;
  rows.forEach((_row, index) => {
    if (
      numberAt(speed, ["after", "throughput", index, "concurrency"], SPEED) >
      numberAt(speed, ["after", "throughput", top, "concurrency"], SPEED)
    )
      top = index;
  });
  const buildPath = ["after", "throughput", top];

  const claimed = at(speed, ["after", "pipeline"], SPEED) as Record<string, Json>;
  const phase = claimed["atClaimed"] === undefined || claimed["atClaimed"] === null ? "saturation" : "atClaimed";
  const eventPath = ["after", "pipeline", phase];

  const gatewayRows = at(gateway, ["throughput"], GATEWAY);
  if (!Array.isArray(gatewayRows) || gatewayRows.length === 0) throw new Error(`${GATEWAY}: throughput has no rows`);
  const perRoute = gatewayRows.map((_row, index) => {
    const setup = ["throughput", index, "bySetup", "gateway"];
    const stream = at(gateway, ["throughput", index, "stream"], GATEWAY) === true;
    return {
      cpuMsPerRequest:
        (numberAt(gateway, [...setup, "cpu", "proxy"], GATEWAY) * 10) /
        positiveAt(gateway, [...setup, "perSecond"], GATEWAY),
      route: `${stringAt(gateway, ["throughput", index, "route"], GATEWAY)}${stream ? ", streaming" : ", JSON"}`,
      concurrency: numberAt(gateway, ["throughput", index, "concurrency"], GATEWAY),
    };
  });
  const costliest = perRoute.reduce((a, b) => (b.cpuMsPerRequest > a.cpuMsPerRequest ? b : a));

  return {
    speedRun: {
      measuredAt: stringAt(speed, ["measuredAt"], SPEED),
      commit: stringAt(speed, ["after", "commit"], SPEED),
      quick: at(speed, ["quick"], SPEED) === true,
    },
    gatewayRun: {
      measuredAt: stringAt(gateway, ["measuredAt"], GATEWAY),
      quick: at(gateway, ["quick"], GATEWAY) === true,
    },
    builds: {
      concurrency: numberAt(speed, [...buildPath, "concurrency"], SPEED),
      perSecond: positiveAt(speed, [...buildPath, "perSecond"], SPEED),
      cpu: cpuAt(speed, buildPath, SPEED),
      source: `speed.json after.throughput[${top}]`,
    },
    events: {
      phase,
      perSecond: positiveAt(speed, [...eventPath, "answeredPerSecond"], SPEED),
      cpu: cpuAt(speed, eventPath, SPEED),
      source: `speed.json after.pipeline.${phase}`,
    },
    relayShownPerSecond: positiveAt(speed, ["after", "pipeline", "saturation", "endToEndPerSecond"], SPEED),
    viewCache: {
      bytes: positiveAt(speed, ["after", "memory", "viewCacheBytes"], SPEED),
      sessions: positiveAt(speed, ["after", "memory", "viewCacheSessions"], SPEED),
      meanMessagesPerSession: positiveAt(speed, ["after", "memory", "meanMessagesPerSession"], SPEED),
      budgetBytes: positiveAt(speed, ["after", "memory", "viewCacheBytesBudget"], SPEED),
      retainedPer1000SessionsBytes: positiveAt(speed, ["after", "memory", "retainedPer1000SessionsBytes"], SPEED),
    },
    gateway: costliest,
  };
}
