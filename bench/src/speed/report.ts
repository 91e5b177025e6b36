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

export function fmt(value: number | undefined, digits = 1): string {
  if (value === undefined || !Number.isFinite(value)) return "–";
  return value.toFixed(digits);
}

export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}
