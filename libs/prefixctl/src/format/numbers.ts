/** 453569 → "453,569"; grouping by hand so output does not depend on the ICU data Node was built with. */
export function formatCount(value: number): string {
  const sign = value < 0 ? "-" : "";
  return sign + String(Math.trunc(Math.abs(value))).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** A 0..1 share as "1.9%". */
export function formatShare(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

/** Money in the price table's unit; four decimals because one cached call costs a few hundredths. */
export function formatCost(value: number): string {
  return value.toFixed(4);
}

export function formatExtraCost(value: number): string {
  return value > 0 ? `+${formatCost(value)}` : formatCost(value);
}

/** Cached share of a call from its tokens; undefined when nothing was sent. */
export function cachedShare(promptTokens: number, cachedTokens: number): number | undefined {
  return promptTokens > 0 ? cachedTokens / promptTokens : undefined;
}

/** UTC ISO-8601 with milliseconds; "-" for an unset (0) timestamp. */
export function formatUtc(ms: number): string {
  return ms > 0 ? new Date(ms).toISOString() : "-";
}

/** UTC to the second, "2026-10-13 14:00:00", for table cells that must fit 120 columns. */
export function formatUtcSeconds(ms: number): string {
  return ms > 0 ? new Date(ms).toISOString().slice(0, 19).replace("T", " ") : "-";
}

/** Whole percent of a part in a total, for the "110 workspace-rules (75%)" summary. */
export function percentOf(part: number, total: number): string {
  return total > 0 ? `${Math.round((part / total) * 100)}%` : "-";
}
