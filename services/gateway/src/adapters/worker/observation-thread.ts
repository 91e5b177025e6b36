// The proxy's side of the observation thread. The proxy's thread only copies each exchange's facts
// into a message; cutting, comparing, the outbox's INSERTs and the relay's Kafka produce run on the
// other thread, so a caller never waits behind an earlier exchange's observation (at concurrency 1
// they used to share one loop). Fail open like the rest: when more exchanges are waiting than the
// bound, or the thread is down, an exchange is dropped and counted, and traffic never notices.

import { Worker } from "node:worker_threads";
import type { Logger } from "@prefix-guard/logging";
import type { ExchangeFacts, UnobservedCounter, UnobservedReason } from "../../application/observe-exchange";
import {
  type FromObservationThread,
  factsToWire,
  type ToObservationThread,
  type WireFacts,
} from "./observation-messages";

export interface ObservationThreadOptions {
  /** The thread's entry module (observation-worker.ts, or .js when built). */
  readonly entry: URL;
  /** Handed to the thread as its workerData. */
  readonly workerData: unknown;
  /** Exchanges sent to the thread and not yet handled there, at most; more are dropped (observer_busy). */
  readonly maxInFlight: number;
  /** Their request bytes, at most; past it an exchange is dropped (observer_busy), unless none is waiting. */
  readonly maxInFlightBytes: number;
  readonly unobserved: UnobservedCounter;
  readonly logger: Logger;
  /** First wait before starting a thread that exited again (doubled up to 30 s). */
  readonly restartDelayMs?: number;
  /** How long a metrics request or the stop waits for the thread. */
  readonly answerTimeoutMs?: number;
}

const MAX_RESTART_DELAY_MS = 30_000;
/**
 * An exchange waits this long at most for others to cross with it in one message. A message per
 * exchange cost about twice as much CPU (the copy, the wake-up of the other thread, its dispatch)
 * as one per four; the outbox holds each batch for 20 ms anyway.
 */
const SEND_LINGER_MS = 5;
/** Exchanges sent in one message at most. */
const MAX_SEND_BATCH = 64;

export class ObservationThread {
  private worker: Worker | null = null;
  private inFlight = 0;
  private inFlightBytes = 0;
  private stopping = false;
  private restartDelayMs: number;
  private restartTimer: NodeJS.Timeout | null = null;
  private nextMetricsId = 0;
  private readonly metricsWaiters = new Map<number, (text: string) => void>();
  private stopped: (() => void) | null = null;
  /** Exchanges taken and not yet sent (already counted in inFlight), and their bytes to transfer. */
  private unsent: WireFacts[] = [];
  private unsentTransfer: ArrayBuffer[] = [];
  private sendTimer: NodeJS.Timeout | null = null;
  private exchangeMessages = 0;

  private constructor(private readonly options: ObservationThreadOptions) {
    this.restartDelayMs = options.restartDelayMs ?? 1_000;
    this.spawn();
  }

  static start(options: ObservationThreadOptions): ObservationThread {
    return new ObservationThread(options);
  }

  /** Exchanges sent and not yet reported handled (tests, and the bench's view of the backlog). */
  get waiting(): number {
    return this.inFlight;
  }

  /** Their request bytes. */
  get waitingBytes(): number {
    return this.inFlightBytes;
  }

  /** Messages that carried exchanges to the thread so far (tests: several exchanges cross in one). */
  get exchangeMessagesSent(): number {
    return this.exchangeMessages;
  }

  observe(facts: ExchangeFacts): void {
    const worker = this.worker;
    if (worker === null || this.stopping) {
      this.options.unobserved.count("observer_failed");
      return;
    }
    const size = facts.requestBytes.byteLength;
    if (
      this.inFlight >= this.options.maxInFlight ||
      (this.inFlight > 0 && this.inFlightBytes + size > this.options.maxInFlightBytes)
    ) {
      this.options.unobserved.count("observer_busy");
      return;
    }
    const wire = factsToWire(facts);
    this.inFlight += 1;
    this.inFlightBytes += size;
    this.unsent.push(wire.facts);
    this.unsentTransfer.push(...wire.transfer);
    if (this.unsent.length >= MAX_SEND_BATCH) this.sendUnsent();
    else this.sendTimer ??= setTimeout(this.sendUnsent, SEND_LINGER_MS);
  }

  private readonly sendUnsent = (): void => {
    if (this.sendTimer !== null) {
      clearTimeout(this.sendTimer);
      this.sendTimer = null;
    }
    const facts = this.unsent;
    const transfer = this.unsentTransfer;
    if (facts.length === 0) return;
    this.unsent = [];
    this.unsentTransfer = [];
    // A thread that exited counted these among the lost (its exit handler) and cleared them first.
    const worker = this.worker;
    if (worker === null) return;
    worker.postMessage({ kind: "exchanges", facts } satisfies ToObservationThread, transfer);
    this.exchangeMessages += 1;
  };

  /** The thread's series in the Prometheus text format; empty when it does not answer in time. */
  async metricsText(): Promise<string> {
    const worker = this.worker;
    if (worker === null) return "";
    const id = this.nextMetricsId++;
    return new Promise<string>((resolve) => {
      const timer = setTimeout(() => {
        this.metricsWaiters.delete(id);
        resolve("");
      }, this.options.answerTimeoutMs ?? 2_000);
      this.metricsWaiters.set(id, (text) => {
        clearTimeout(timer);
        resolve(text);
      });
      worker.postMessage({ kind: "metrics", id } satisfies ToObservationThread);
    });
  }

  /**
   * Lets the thread handle what it was sent and write it (the outbox's own deadlines bound that),
   * then ends it; after `graceMs` it is terminated, and what it had not handled is lost.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    if (this.restartTimer !== null) clearTimeout(this.restartTimer);
    // What was taken before the stop is handled before it.
    this.sendUnsent();
    const worker = this.worker;
    if (worker === null) return;
    const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
    const answered = new Promise<void>((resolve) => {
      this.stopped = resolve;
    });
    worker.postMessage({ kind: "stop" } satisfies ToObservationThread);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), graceMs);
    });
    const outcome = await Promise.race([answered.then(() => exited), late]);
    clearTimeout(timer);
    if (outcome === "late") {
      this.options.logger.warn({ waiting: this.inFlight }, "observation thread did not stop in time; terminated");
      await worker.terminate();
    }
    this.worker = null;
  }

  private spawn(): void {
    const { entry, workerData, logger } = this.options;
    // From source (development, tests under tsx) the thread registers tsx itself: on Node 20 a
    // worker does not get the parent's `--import tsx` loader for its entry. Built, it is plain .js.
    const worker = entry.pathname.endsWith(".ts")
      ? new Worker(
          `import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); });`,
          { eval: true, workerData },
        )
      : new Worker(entry, { workerData });
    this.worker = worker;
    worker.on("message", (message: FromObservationThread) => this.onMessage(message));
    // The error's class only: a database or broker error can quote its connection string.
    worker.on("error", (error) => logger.error({ err: error.name }, "observation thread failed"));
    worker.on("exit", (code) => {
      if (this.worker === worker) this.worker = null;
      for (let i = 0; i < this.inFlight; i++) this.options.unobserved.count("observer_failed");
      // Those not sent yet are among them: no later thread gets them.
      this.unsent = [];
      this.unsentTransfer = [];
      this.inFlight = 0;
      this.inFlightBytes = 0;
      if (this.stopping) return;
      logger.error({ code, restartInMs: this.restartDelayMs }, "observation thread exited; starting another");
      this.restartTimer = setTimeout(() => {
        this.restartTimer = null;
        if (!this.stopping) this.spawn();
      }, this.restartDelayMs);
      this.restartDelayMs = Math.min(this.restartDelayMs * 2, MAX_RESTART_DELAY_MS);
    });
  }

  private onMessage(message: FromObservationThread): void {
    switch (message.kind) {
      case "observed": {
        this.inFlight = Math.max(0, this.inFlight - message.count);
        this.inFlightBytes = this.inFlight === 0 ? 0 : Math.max(0, this.inFlightBytes - message.bytes);
        for (const [reason, times] of Object.entries(message.unobserved))
          for (let i = 0; i < (times ?? 0); i++) this.options.unobserved.count(reason as UnobservedReason);
        // A thread that handles work is healthy again: the next failure starts from the first delay.
        this.restartDelayMs = this.options.restartDelayMs ?? 1_000;
        return;
      }
      case "metrics":
        this.metricsWaiters.get(message.id)?.(message.text);
        this.metricsWaiters.delete(message.id);
        return;
      case "stopped":
        this.stopped?.();
        return;
    }
  }
}
