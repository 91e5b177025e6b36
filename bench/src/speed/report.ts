// Pure helpers for the speed bench: CPU from /proc tick deltas, Prometheus histogram deltas, ratios
// and the markdown table pasted into README. No I/O here so each piece has a unit test.
import { percentile } from "../stats";

export interface Quantiles {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
}

export function quantiles(samples: readonly number[]): Quantiles {
  const mean = samples.reduce((a, b) => a + b, 0) / Math.max(1, samples.length);
  return { n: samples.length, p50: percentile(samples, 50), p99: percentile(samples, 99), mean };
}

/** utime + stime (clock ticks) from the text of /proc/<pid>/stat; the command name may hold spaces. */
export function cpuTicksFromStat(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // After "pid (comm) ", field 3 (state) is index 0, so utime (14) and stime (15) are 11 and 12.
  return Number(fields[11] ?? Number.NaN) + Number(fields[12] ?? Number.NaN);
}

/** Share of one core, in percent, used over wallMs. */
export function cpuPercent(ticksDelta: number, wallMs: number, ticksPerSecond = 100): number {
  if (wallMs <= 0) return Number.NaN;
  return (100 * (ticksDelta / ticksPerSecond) * 1000) / wallMs;
}

/** VmRSS in bytes from the text of /proc/<pid>/status. */
export function rssBytesFromStatus(status: string): number {
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  return match ? Number(match[1]) * 1024 : Number.NaN;
}

export interface HistogramTotals {
  readonly sum: number;
  readonly count: number;
}

/**
 * `_sum` and `_count` of one Prometheus histogram from an exposition text, keyed by the value of
 * `label` (series without that label, or not matching `where`, are skipped).
 */
export function histogramTotals(
  exposition: string,
  name: string,
  label: string,
  where: Readonly<Record<string, string>> = {},
): Map<string, HistogramTotals> {
  const totals = new Map<string, { sum: number; count: number }>();
  const line = new RegExp(`^${name}_(sum|count)\\{([^}]*)\\}\\s+(\\S+)`);
  for (const text of exposition.split("\n")) {
    const match = line.exec(text);
    if (!match) continue;
    const labels = parseLabels(match[2] ?? "");
    const key = labels[label];
    if (key === undefined) continue;
    if (Object.entries(where).some(([k, v]) => labels[k] !== v)) continue;
    const entry = totals.get(key) ?? { sum: 0, count: 0 };
    if (match[1] === "sum") entry.sum += Number(match[3]);
    else entry.count += Number(match[3]);
    totals.set(key, entry);
  }
  return totals;
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const match of text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
    if (match[1] !== undefined) labels[match[1]] = match[2] ?? "";
  }
  return labels;
}

/** Mean ms per observation between two scrapes, per key (keys with no new observations are left out). */
export function meanMsBetween(
  before: ReadonlyMap<string, HistogramTotals>,
  after: ReadonlyMap<string, HistogramTotals>,
): Record<string, { meanMs: number; count: number }> {
  const out: Record<string, { meanMs: number; count: number }> = {};
  for (const [key, end] of after) {
    const start = before.get(key) ?? { sum: 0, count: 0 };
    const count = end.count - start.count;
    if (count <= 0) continue;
    out[key] = { meanMs: ((end.sum - start.sum) * 1000) / count, count };
  }
  return out;
}

/** Value of an unlabelled gauge (default labels such as service="..." allowed), NaN when absent. */
export function gaugeValue(exposition: string, name: string): number {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+(\\S+)`, "m").exec(exposition);
  return match ? Number(match[1]) : Number.NaN;
}

/** Sum of a counter's series over all their labels; 0 when it has none (nothing counted yet). */
export function counterTotal(exposition: string, name: string): number {
  let total = 0;
  for (const match of exposition.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+(\\S+)`, "gm")))
    total += Number(match[1]);
  return total;
}

export function ratio(value: number, floor: number): number {
  return floor > 0 ? value / floor : Number.NaN;
}

/** The goals these comparisons are judged by (the speed goals of the event pipeline and of Resolve). */
export const GOALS = {
  /** CPU per event of the whole pipeline (its processes + mariadbd + kafka) ÷ the floor's, at most. */
  pipelineCpuPerEventOverFloor: 2,
  /** Resolve/s of one rules-snapshot at c=32 ÷ bare gRPC calls/s at c=32, at least. */
  resolvePerSecondOverBare: 0.7,
} as const;

/** The processes every side shares: the database and the broker. */
export const SHARED_PROCESSES = ["mariadbd", "kafka"] as const;

/**
 * CPU ms per event of the named processes: their summed share of one core over `seconds`, spread
 * over `events`. NaN when one of them was not measured, rather than a cost that leaves it out.
 */
export function cpuMsPerEvent(
  cpu: Readonly<Record<string, number>>,
  names: readonly string[],
  seconds: number,
  events: number,
): number {
  if (events <= 0 || seconds <= 0) return Number.NaN;
  let percent = 0;
  for (const name of names) {
    const share = cpu[name];
    if (share === undefined) return Number.NaN;
    percent += share;
  }
  return (percent * seconds * 10) / events;
}

/** One side's run: events applied end to end and the CPU of each process over that window. */
export interface EndToEndCpu {
  readonly endToEndPerSecond: number;
  readonly eventsApplied: number;
  readonly endToEndSeconds: number;
  readonly endToEndCpu: Readonly<Record<string, number>>;
}

export interface CpuPerEventSplit {
  /** The side's own processes: the services, or the floor's server and consumer. */
  readonly own: number;
  /** mariadbd + kafka. */
  readonly shared: number;
  readonly total: number;
}

export interface SideCost {
  readonly processes: readonly string[];
  readonly eventsPerSecond: number;
  readonly events: number;
  readonly cpuMsPerEvent: CpuPerEventSplit;
}

export interface PipelineVsFloor {
  readonly pipeline: SideCost;
  readonly floor: SideCost;
  /** pipeline ÷ floor, column by column. */
  readonly ratio: CpuPerEventSplit;
  readonly goal: number;
  /** ratio.total within the goal. */
  readonly pass: boolean;
}

function sideCost(run: EndToEndCpu, processes: readonly string[]): SideCost {
  const per = (names: readonly string[]) =>
    cpuMsPerEvent(run.endToEndCpu, names, run.endToEndSeconds, run.eventsApplied);
  return {
    processes,
    eventsPerSecond: run.endToEndPerSecond,
    events: run.eventsApplied,
    cpuMsPerEvent: {
      own: per(processes),
      shared: per(SHARED_PROCESSES),
      total: per([...processes, ...SHARED_PROCESSES]),
    },
  };
}

/** The pipeline's CPU per event against its floor's, both measured end to end in the same run. */
export function pipelineVsFloor(
  pipeline: EndToEndCpu,
  pipelineProcesses: readonly string[],
  floor: EndToEndCpu,
  floorProcesses: readonly string[],
): PipelineVsFloor {
  const p = sideCost(pipeline, pipelineProcesses);
  const f = sideCost(floor, floorProcesses);
  const total = ratio(p.cpuMsPerEvent.total, f.cpuMsPerEvent.total);
  return {
    pipeline: p,
    floor: f,
    ratio: {
      own: ratio(p.cpuMsPerEvent.own, f.cpuMsPerEvent.own),
      shared: ratio(p.cpuMsPerEvent.shared, f.cpuMsPerEvent.shared),
      total,
    },
    goal: GOALS.pipelineCpuPerEventOverFloor,
    pass: total <= GOALS.pipelineCpuPerEventOverFloor,
  };
}

export function passFail(pass: boolean): string {
  return pass ? "PASS" : "**FAIL**";
}

export function fmt(value: number | undefined, digits = 1): string {
  if (value === undefined || !Number.isFinite(value)) return "–";
  return value.toFixed(digits);
}

export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}
