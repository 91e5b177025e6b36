const unitMs = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
} as const;

export type DurationUnit = keyof typeof unitMs;

/**
 * "30m" / "24h" / "7d" → milliseconds; undefined when the text is not one positive integer followed
 * by one of `units`. A bare number is rejected on purpose: "--since 24" could mean hours or days.
 */
export function parseDuration(text: string, units: readonly DurationUnit[] = ["s", "m", "h", "d"]): number | undefined {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = match[2] as DurationUnit;
  if (!units.includes(unit) || !Number.isSafeInteger(amount) || amount <= 0) return undefined;
  const ms = amount * unitMs[unit];
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** The shortest exact spelling of a duration, for messages: 86400000 → "1d", 5000 → "5s". */
export function formatDuration(ms: number): string {
  for (const unit of ["d", "h", "m", "s"] as const) {
    if (ms >= unitMs[unit] && ms % unitMs[unit] === 0) return `${ms / unitMs[unit]}${unit}`;
  }
  return `${ms}ms`;
}
