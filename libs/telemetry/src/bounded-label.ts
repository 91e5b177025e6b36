/** The label value every value past the cap is counted under. */
export const OTHER_LABEL_VALUE = "(other)";

/**
 * A label whose values come from an open set (workspaces) kept bounded: the first `max` distinct
 * values keep their own name, every later one is counted as "(other)". Prometheus holds one series
 * per value, so a fleet with many more workspaces than the cap still has a bounded number of
 * series, and the busiest workspaces (usually the first seen) keep their names. A restart starts over.
 */
export class BoundedLabelValues {
  private readonly kept = new Set<string>();

  constructor(private readonly max: number) {
    if (!Number.isInteger(max) || max < 0) throw new Error("BoundedLabelValues: max must be an integer >= 0");
  }

  valueOf(raw: string): string {
    if (this.kept.has(raw)) return raw;
    if (this.kept.size >= this.max) return OTHER_LABEL_VALUE;
    this.kept.add(raw);
    return raw;
  }
}
