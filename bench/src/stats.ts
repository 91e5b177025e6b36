/** Percentile by nearest rank over a copy of the samples (ms). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

export interface LatencySummary {
  readonly name: string;
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
}

export function summarize(name: string, samples: readonly number[]): LatencySummary {
  const mean = samples.reduce((a, b) => a + b, 0) / Math.max(1, samples.length);
  return { name, n: samples.length, p50: percentile(samples, 50), p99: percentile(samples, 99), mean };
}

export async function timed<T>(work: () => Promise<T>): Promise<[number, T]> {
  const started = performance.now();
  const result = await work();
  return [performance.now() - started, result];
}

export function formatTable(rows: readonly LatencySummary[], baseline?: string): string {
  const base = rows.find((r) => r.name === baseline);
  const header = `${"case".padEnd(44)} ${"n".padStart(6)} ${"p50 ms".padStart(9)} ${"p99 ms".padStart(9)} ${"mean ms".padStart(9)}${base ? `  ${"p50 ×base".padStart(10)}` : ""}`;
  const lines = rows.map((r) => {
    const ratio = base ? `  ${(r.p50 / base.p50).toFixed(2).padStart(10)}` : "";
    return `${r.name.padEnd(44)} ${String(r.n).padStart(6)} ${r.p50.toFixed(3).padStart(9)} ${r.p99.toFixed(3).padStart(9)} ${r.mean.toFixed(3).padStart(9)}${ratio}`;
  });
  return [header, "-".repeat(header.length), ...lines].join("\n");
}

const startedAt = performance.now();

/** On stderr, with seconds since the bench started (to see which phase the time goes to). */
export function progress(message: string): void {
  process.stderr.write(`[bench +${((performance.now() - startedAt) / 1000).toFixed(0)}s] ${message}\n`);
}
