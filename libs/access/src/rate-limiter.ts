export interface PrincipalLimits {
  /** Calls per second to one service process (token bucket refill), and its burst. */
  readonly requestsPerSecond?: number | undefined;
  readonly burst?: number | undefined;
  /** Live (not deleted) sessions this principal may own at once. */
  readonly maxSessions?: number | undefined;
}

export type RateDecision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterMs: number };

interface Bucket {
  tokens: number;
  refilledAtMs: number;
}

const ALLOWED: RateDecision = { allowed: true };

/**
 * A token bucket per principal, per process: `requestsPerSecond` refill and `burst` capacity.
 * Memory is bounded by the principals file (one bucket per named principal); a principal without
 * a rate is never limited. The clock is passed in, so tests need no timers.
 */
export class RequestRateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  take(principal: { readonly name: string; readonly limits: PrincipalLimits }, nowMs: number): RateDecision {
    const rate = principal.limits.requestsPerSecond;
    if (rate === undefined || rate <= 0) return ALLOWED;
    const capacity = Math.max(1, principal.limits.burst ?? rate);
    let bucket = this.buckets.get(principal.name);
    if (bucket === undefined) {
      bucket = { tokens: capacity, refilledAtMs: nowMs };
      this.buckets.set(principal.name, bucket);
    }
    const elapsed = Math.max(0, nowMs - bucket.refilledAtMs);
    bucket.tokens = Math.min(capacity, bucket.tokens + (elapsed * rate) / 1000);
    bucket.refilledAtMs = nowMs;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return ALLOWED;
    }
    return { allowed: false, retryAfterMs: Math.ceil(((1 - bucket.tokens) * 1000) / rate) };
  }

  /** Forgets principals no longer in the file (after a reload). */
  retain(names: ReadonlySet<string>): void {
    for (const name of this.buckets.keys()) if (!names.has(name)) this.buckets.delete(name);
  }
}
