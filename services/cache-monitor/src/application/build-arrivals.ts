/**
 * Wakes a RecordUsage waiting for its build. A build's FingerprintObserved reaches cache-monitor
 * through Kafka, so a harness that records usage right after BuildRequest (a fast or cached LLM
 * answer) can be ahead of it, or of the PrefixChanged it announced; the waiter is woken the moment
 * this process's consumer has stored either instead of polling the database at a fixed rate.
 */
export class BuildArrivals {
  private readonly waiters = new Map<string, Set<() => void>>();

  /** Called after a prefix event (observation or change) of (session, request) was committed. */
  announce(sessionId: string, requestId: string): void {
    const key = arrivalKey(sessionId, requestId);
    const waiting = this.waiters.get(key);
    if (waiting === undefined) return;
    this.waiters.delete(key);
    for (const wake of waiting) wake();
  }

  /**
   * Resolves true when (session, request) is announced within `timeoutMs`, false when the time ran
   * out. Register before checking the database, then check: an arrival between the check and the
   * wait is not lost.
   */
  next(sessionId: string, requestId: string, timeoutMs: number): { arrived: Promise<boolean>; cancel: () => void } {
    const key = arrivalKey(sessionId, requestId);
    let settle: (arrived: boolean) => void = () => {};
    const arrived = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    const wake = () => {
      clearTimeout(timer);
      settle(true);
    };
    const forget = () => {
      const waiting = this.waiters.get(key);
      waiting?.delete(wake);
      if (waiting?.size === 0) this.waiters.delete(key);
    };
    const timer = setTimeout(() => {
      forget();
      settle(false);
    }, timeoutMs);
    const waiting = this.waiters.get(key) ?? new Set<() => void>();
    waiting.add(wake);
    this.waiters.set(key, waiting);
    return {
      arrived,
      cancel: () => {
        clearTimeout(timer);
        forget();
        settle(false);
      },
    };
  }

  /** Waiters still registered (a leak check for tests). */
  get pending(): number {
    let count = 0;
    for (const waiting of this.waiters.values()) count += waiting.size;
    return count;
  }
}

const arrivalKey = (sessionId: string, requestId: string) => JSON.stringify([sessionId, requestId]);
