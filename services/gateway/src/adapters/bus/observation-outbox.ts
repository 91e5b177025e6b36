// The gateway's events go through an outbox table in its own database (SQLite by default, MySQL
// with DATABASE_URL), relayed to the bus like every service's: written once, published even while
// the broker is down. Unlike the other services, the gateway serves whether or not that database is
// up: it is opened in the background (and retried), observations wait in a bounded queue, every
// database call has a deadline, and an exchange whose events cannot be written is dropped and
// counted (prefixguard_gateway_unobserved_total{reason="outbox_*"}). The client never waits on any
// of it: enqueue() only appends to the queue.

import {
  enqueueOutboxMessages,
  type MessageBus,
  type OutboxEntry,
  type OutboxRelay,
  tableOutboxSource,
  traceHeaders,
} from "@prefix-guard/bus";
import { type Database, describeDatabaseUrl, withSql } from "@prefix-guard/db";
import { cloudEventHeaders, encodeEnvelope, Topics } from "@prefix-guard/events";
import type { Logger } from "@prefix-guard/logging";
import { gatewayMigrations } from "@prefix-guard/migrations/gateway";
import { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import { LlmUsageEvent } from "@prefix-guard/proto/events/v1/usage_events";
import { openServiceDatabase, type SchemaPolicy, startServiceRelay } from "@prefix-guard/runtime";
import type { Registry } from "prom-client";
import type { ObservationEvents, ObservationSink } from "../../application/observation-publisher";
import type { UnobservedCounter } from "../../application/observe-exchange";

export interface ObservationOutboxOptions {
  readonly databaseUrl: string;
  readonly schema: SchemaPolicy;
  readonly bus: MessageBus;
  /** Where the relay's series go (the gateway's registry). */
  readonly registry: Registry;
  readonly logger: Logger;
  readonly now: () => number;
  readonly unobserved: UnobservedCounter;
  /** Deadline of every database call: connecting, taking a pooled connection, writing a batch. */
  readonly timeoutMs: number;
  /** Exchanges waiting to be written at most; more are dropped (outbox_full). */
  readonly maxQueued: number;
  /** Published outbox rows are deleted after this; absent = the relay's default. */
  readonly retentionMs?: number | undefined;
  /** Leases the relay is split over (RELAY_LEASES); absent = 1. */
  readonly relayLeases?: number | undefined;
  /** First delay before opening the database again after a failure (doubled up to 30 s). */
  readonly reopenDelayMs?: number;
}

type State = "opening" | "open" | "down" | "stopped";

interface Queued {
  readonly entries: readonly OutboxEntry[];
  readonly bytes: number;
}

/** One INSERT at most this big (MySQL's max_allowed_packet is 16 MiB by default on MariaDB). */
const MAX_BATCH_BYTES = 1024 * 1024;
const MAX_BATCH_EXCHANGES = 200;
const MAX_REOPEN_DELAY_MS = 30_000;
/**
 * A write waits this long after the first queued exchange for others to join it, so a busy gateway
 * writes one INSERT, and wakes the relay once, per window instead of per exchange (each costs
 * several round trips of CPU on the proxy's thread). Observations reach the bus this much later,
 * which nothing downstream can tell from the relay's own delay.
 */
const FLUSH_LINGER_MS = 20;

class DeadlineExceeded extends Error {
  override readonly name = "DeadlineExceeded";
}

/** Rejects after `ms`; the operation itself may still finish later (its result is then ignored). */
async function withDeadline<T>(operation: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceeded(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([operation, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function entriesOf(events: ObservationEvents, headers: Readonly<Record<string, string>>, nowMs: number): Queued {
  const entries: OutboxEntry[] = events.prefix.map((event) => ({
    topic: Topics.promptPrefix,
    key: events.sessionId,
    value: encodeEnvelope(PrefixEvent, event),
    headers: { "pg-event-type": event.type, ...cloudEventHeaders(Topics.promptPrefix, "gateway", event), ...headers },
    nowMs,
  }));
  if (events.usage !== null)
    entries.push({
      topic: Topics.llmUsage,
      key: events.sessionId,
      value: encodeEnvelope(LlmUsageEvent, events.usage),
      headers: {
        "pg-event-type": events.usage.type,
        ...cloudEventHeaders(Topics.llmUsage, "gateway", events.usage),
        ...headers,
      },
      nowMs,
    });
  return { entries, bytes: entries.reduce((sum, entry) => sum + entry.value.byteLength, 0) };
}

export class ObservationOutbox implements ObservationSink {
  private state: State = "opening";
  private db: Database | null = null;
  private relay: OutboxRelay | null = null;
  private readonly queue: Queued[] = [];
  private flushing: Promise<void> | null = null;
  private lingering: NodeJS.Timeout | null = null;
  private readonly opened: Promise<void>;
  private cancelReopenWait: (() => void) | null = null;
  /** Whether the last write failed: a warning when writes start failing, an info when they recover. */
  private failing = false;

  private constructor(private readonly options: ObservationOutboxOptions) {
    this.opened = this.openUntilStopped();
  }

  /** Starts opening the database in the background; the gateway serves meanwhile. */
  static start(options: ObservationOutboxOptions): ObservationOutbox {
    return new ObservationOutbox(options);
  }

  enqueue(events: ObservationEvents): void {
    const { unobserved, maxQueued } = this.options;
    if (this.state === "down" || this.state === "stopped") {
      unobserved.count("outbox_unavailable");
      return;
    }
    if (this.queue.length >= maxQueued) {
      unobserved.count("outbox_full");
      return;
    }
    this.queue.push(entriesOf(events, traceHeaders(), this.options.now()));
    if (this.state === "open") this.scheduleFlush();
  }

  /** Resolves once everything queued so far was written or dropped (tests and shutdown). */
  async drained(): Promise<void> {
    if (this.lingering !== null) {
      clearTimeout(this.lingering);
      this.lingering = null;
      this.startFlush();
    }
    while (this.flushing !== null) await this.flushing;
  }

  /** Stops taking observations, writes what is queued (each batch within the deadline), stops the relay. */
  async stop(): Promise<void> {
    if (this.state === "stopped") return;
    const wasOpen = this.state === "open";
    this.state = "stopped";
    this.cancelReopenWait?.();
    if (this.lingering !== null) {
      clearTimeout(this.lingering);
      this.lingering = null;
    }
    if (wasOpen) {
      await this.drained();
      await this.flushQueue();
    }
    await this.dropQueued("outbox_unavailable");
    // An open still under way finishes within its own deadlines, and closes what it opened.
    await this.opened;
    await this.relay?.stop();
    await this.db?.destroy();
    this.relay = null;
    this.db = null;
  }

  private async openUntilStopped(): Promise<void> {
    const { logger, databaseUrl } = this.options;
    let delayMs = this.options.reopenDelayMs ?? 1_000;
    for (;;) {
      let db: Database;
      try {
        db = await openServiceDatabase(
          databaseUrl,
          gatewayMigrations,
          logger,
          { acquireTimeoutMs: this.options.timeoutMs, connectTimeoutMs: this.options.timeoutMs },
          this.options.schema,
        );
      } catch (error) {
        if (this.stopped()) return;
        if (this.state === "opening")
          logger.warn(
            { err: error, database: describeDatabaseUrl(databaseUrl), retry_ms: delayMs },
            "gateway database unavailable: traffic flows, observations are dropped until it opens",
          );
        this.state = "down";
        await this.dropQueued("outbox_unavailable");
        await this.pause(delayMs);
        delayMs = Math.min(delayMs * 2, MAX_REOPEN_DELAY_MS);
        if (this.stopped()) return;
        continue;
      }
      if (this.stopped()) {
        await db.destroy();
        return;
      }
      this.db = db;
      this.relay = startServiceRelay({
        name: "gateway",
        db,
        source: tableOutboxSource(db),
        bus: this.options.bus,
        registry: this.options.registry,
        logger,
        now: this.options.now,
        retentionMs: this.options.retentionMs,
        leases: this.options.relayLeases,
      });
      this.state = "open";
      logger.info({ database: describeDatabaseUrl(databaseUrl) }, "gateway observations publishing");
      this.startFlush();
      return;
    }
  }

  /** Read afresh after every await: stop() may have run meanwhile. */
  private stopped(): boolean {
    return this.state === "stopped";
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.cancelReopenWait = null;
        resolve();
      }
      this.cancelReopenWait = done;
    });
  }

  private async dropQueued(reason: "outbox_unavailable"): Promise<void> {
    const dropped = this.queue.splice(0, this.queue.length);
    for (const _ of dropped) this.options.unobserved.count(reason);
  }

  private scheduleFlush(): void {
    if (this.flushing !== null || this.lingering !== null) return;
    this.lingering = setTimeout(() => {
      this.lingering = null;
      this.startFlush();
    }, FLUSH_LINGER_MS);
  }

  private startFlush(): void {
    if (this.flushing !== null) return;
    this.flushing = this.flushQueue().finally(() => {
      this.flushing = null;
    });
  }

  /** Writes the queue in batches, one INSERT each; a batch that fails or overruns its deadline is dropped. */
  private async flushQueue(): Promise<void> {
    const { db } = this;
    if (db === null) return;
    while (this.queue.length > 0) {
      const batch = this.takeBatch();
      try {
        await withDeadline(
          // Plain SQL, not the query builder: the INSERT is written for every batch.
          withSql(db, (sql) =>
            enqueueOutboxMessages(
              sql,
              batch.flatMap((queued) => queued.entries),
            ),
          ),
          this.options.timeoutMs,
          "writing the outbox",
        );
        this.relay?.notify();
        if (this.failing) {
          this.failing = false;
          this.options.logger.info({}, "gateway outbox writable again: observations publishing");
        }
      } catch (error) {
        for (const _ of batch) this.options.unobserved.count("outbox_failed");
        if (!this.failing) {
          this.failing = true;
          this.options.logger.warn(
            { err: error instanceof Error ? error.name : typeof error, exchanges: batch.length },
            "gateway outbox write failed: observations dropped until it recovers (traffic unaffected)",
          );
        }
      }
    }
  }

  private takeBatch(): Queued[] {
    const batch: Queued[] = [];
    let bytes = 0;
    while (batch.length < MAX_BATCH_EXCHANGES) {
      const next = this.queue[0];
      if (next === undefined || (batch.length > 0 && bytes + next.bytes > MAX_BATCH_BYTES)) break;
      batch.push(next);
      bytes += next.bytes;
      this.queue.shift();
    }
    return batch;
  }
}
