// Whether a session's provider cache is cold when the next build is made: the idle gap since its
// previous build outlived the retention that build's cache was written under. A held-back AGENTS.md
// edit then protects nothing, and REPIN_WHEN_COLD lets rules-snapshot re-pin it. Only a gap known to
// be longer than the retention counts: an unknown previous build is never cold.

import { expiredAfter, type ModelFamily, type Retention, retentionInForce } from "@prefix-guard/providers";

export interface ColdCache {
  readonly idleMs: number;
  /** The retention in force for the previous build's cache entry, which the gap outlived. */
  readonly retention: Retention;
}

/** What is known of the session's previous build. */
export interface PreviousBuildCache {
  readonly builtAtMs: number;
  /** The model family of the previous build, as the catalogue has it; null = not catalogued. */
  readonly family: ModelFamily | null;
  /** The retention the previous build's body carried; "" = none asked for (the family's default). */
  readonly optedRetention: string;
}

/** The cold gap at `nowMs`, or null while the previous build's cache may still be warm. */
export function coldCacheAt(previous: PreviousBuildCache, nowMs: number): ColdCache | null {
  const retention = retentionInForce(previous.family, previous.optedRetention);
  const idleMs = nowMs - previous.builtAtMs;
  return expiredAfter(idleMs, retention) ? { idleMs, retention } : null;
}

/** An idle gap for a cause sentence, rounded down: 7m, 3h, 2d. */
export function formatIdleGap(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 120) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours}h` : `${Math.floor(hours / 24)}d`;
}
