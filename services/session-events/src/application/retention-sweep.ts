// Automatic expiry: sessions idle longer than SESSION_RETENTION_DAYS are erased exactly
// like a DeleteSession (a SessionDeleted event, so consumers drop them too), a batch of sessions
// per round, each in its own short transaction so a sweep never holds a lock for long. The same
// sweep erases, once at start, the sessions deleted before erasure existed.

import { isPrefixGuardError } from "@prefix-guard/errors";
import type { Logger } from "@prefix-guard/logging";
import { RETENTION_SWEEP_BATCH, retentionCutoffMs } from "../domain/erasure";

/** The erasures the sweep runs (SessionCommands). */
export interface SweepCommands {
  expireSession(sessionId: string, cutoffMs: number): Promise<boolean>;
  eraseDeletedSession(sessionId: string): Promise<boolean>;
}

/** What the sweep lists (SessionStore). */
export interface SweepStore {
  idleSessions(cutoffMs: number, limit: number): Promise<string[]>;
  unerasedDeletedSessions(limit: number): Promise<string[]>;
}

export interface RetentionSweepOptions {
  readonly commands: SweepCommands;
  readonly store: SweepStore;
  readonly logger: Logger;
  readonly now: () => number;
  /** 0: retention off, only the start-up erasure of already deleted sessions runs. */
  readonly retentionDays: number;
  readonly intervalMs: number;
  readonly batchSize?: number;
  /** After each batch that erased something: nudges the relay to publish the SessionDeleted events. */
  readonly afterErase?: () => void;
}

export interface SweepResult {
  /** Idle sessions erased (each got a SessionDeleted). */
  readonly expired: number;
  /** Sessions deleted before erasure existed, erased now. */
  readonly leftovers: number;
  /** Sessions whose erasure failed this round (retried at the next). */
  readonly failed: number;
}

export class RetentionSweep {
  private readonly batchSize: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(private readonly options: RetentionSweepOptions) {
    this.batchSize = options.batchSize ?? RETENTION_SWEEP_BATCH;
  }

  /** Erases leftovers now, then (retention on) expires idle sessions every interval. */
  start(): void {
    this.track(this.run({ leftovers: true }));
  }

  /** Stops the timer and waits for a round in progress (it stops after its current session). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One round: leftovers when asked, then every session idle past the retention, in batches. */
  async runOnce(options: { leftovers: boolean } = { leftovers: false }): Promise<SweepResult> {
    let leftovers = 0;
    let expired = 0;
    let failed = 0;
    if (options.leftovers) {
      const result = await this.eraseInBatches(
        (limit) => this.options.store.unerasedDeletedSessions(limit),
        (sessionId) => this.options.commands.eraseDeletedSession(sessionId),
        "deleted sessions erased",
      );
      leftovers = result.erased;
      failed += result.failed;
    }
    const cutoffMs = retentionCutoffMs(this.options.now(), this.options.retentionDays);
    if (cutoffMs !== undefined) {
      const result = await this.eraseInBatches(
        (limit) => this.options.store.idleSessions(cutoffMs, limit),
        (sessionId) => this.options.commands.expireSession(sessionId, cutoffMs),
        "idle sessions erased",
      );
      expired = result.erased;
      failed += result.failed;
    }
    return { expired, leftovers, failed };
  }

  private async run(options: { leftovers: boolean }): Promise<void> {
    try {
      await this.runOnce(options);
    } catch (error) {
      // Listing failed (the database is away): the next interval tries again.
      this.options.logger.warn({ code: codeOf(error) }, "retention sweep failed; retried at the next interval");
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped || this.options.retentionDays <= 0) return;
    this.timer = setTimeout(() => this.track(this.run({ leftovers: false })), this.options.intervalMs);
    // Never what keeps the process alive.
    this.timer.unref();
  }

  private track(round: Promise<void>): void {
    this.running = round;
  }

  private async eraseInBatches(
    list: (limit: number) => Promise<string[]>,
    erase: (sessionId: string) => Promise<boolean>,
    message: string,
  ): Promise<{ erased: number; failed: number }> {
    let erased = 0;
    let failed = 0;
    const failing = new Set<string>();
    while (!this.stopped) {
      const sessionIds = (await list(this.batchSize + failing.size)).filter((id) => !failing.has(id));
      if (sessionIds.length === 0) break;
      let erasedInBatch = 0;
      for (const sessionId of sessionIds.slice(0, this.batchSize)) {
        if (this.stopped) break;
        try {
          if (await erase(sessionId)) erasedInBatch++;
        } catch (error) {
          failed++;
          failing.add(sessionId);
          this.options.logger.warn({ session_id: sessionId, code: codeOf(error) }, "session erasure failed");
        }
      }
      erased += erasedInBatch;
      if (erasedInBatch > 0) {
        this.options.afterErase?.();
        this.options.logger.info({ erased: erasedInBatch, total: erased }, message);
      }
      // A batch that erased nothing (every session changed since it was listed, or failed) ends the round.
      if (erasedInBatch === 0 || sessionIds.length < this.batchSize) break;
    }
    return { erased, failed };
  }
}

function codeOf(error: unknown): string {
  return isPrefixGuardError(error) ? error.code : "internal";
}
