// The gateway's events are published straight to the bus while it takes them, and go through an
// outbox table in its own database (SQLite by default, MySQL with DATABASE_URL) while it does not:
// relayed like every service's, published once the broker is back. Writing every observation to a
// table first and reading it back made every exchange database work, and a database outage lost
// observations while Kafka was up, for nothing an observation needs: what waits in memory for the
// bus (at most GATEWAY_OUTBOX_QUEUE exchanges) is lost on a crash either way, as observations that
// waited for the database always were (docs/decisions/gateway-direct-publish.md).
//
// Order per session holds across the switch: once a publish fails, every batch goes to the outbox
// until the relay has published all of its rows, and only then straight to the bus again.
//
// Unlike the other services, the gateway serves whether or not that database is up: it is opened in
// the background (and retried), observations wait in a bounded queue, every bus and database call
// has a deadline, and an exchange whose events can be neither published nor written is dropped and
// counted (prefixguard_gateway_unobserved_total{reason="outbox_*"}). The client never waits on any
// of it: enqueue() only appends to the queue.

import {
  enqueueOutboxMessages,
  type MessageBus,
  type OutboxEntry,
  type OutboxRelay,
  type OutgoingMessage,
  processPublisherId,
  relayedMessage,
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
import { Counter, Gauge, type Registry } from "prom-client";
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
  /** Deadline of every bus and database call: publishing, connecting, taking a connection, writing. */
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
/** Where batches go now: straight to the bus, or to the outbox until it is drained. */
type Path = "direct" | "outbox";

interface Queued {
  readonly entries: readonly OutboxEntry[];
  readonly bytes: number;
}

/** One INSERT at most this big (MySQL's max_allowed_packet is 16 MiB by default on MariaDB). */
const MAX_BATCH_BYTES = 1024 * 1024;
const MAX_BATCH_EXCHANGES = 200;
const MAX_REOPEN_DELAY_MS = 30_000;
/** How often, at most, the outbox path asks whether the relay has published everything. */
const DRAINED_CHECK_MS = 1_000;
/** How often a drain the gateway waits for is looked at. */
const DRAIN_POLL_MS = 25;
/**
 * A batch waits this long after the first queued exchange for others to join it, so a busy gateway
 * sends one produce request (or writes one INSERT) per window instead of per exchange. Observations
 * reach the bus this much later, which nothing downstream can tell from a relay's own delay.
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
  private path: Path = "direct";
  private drainedCheckedAtMs = Number.NEGATIVE_INFINITY;
  /** The outbox's unpublished rows at the last check: a smaller count means the relay is draining it. */
  private lastUnpublished = 0;
  private readonly publisherId = processPublisherId();
  private readonly pathGauge: Gauge;
  private readonly publishedStraight: Counter;

  private constructor(private readonly options: ObservationOutboxOptions) {
    this.pathGauge = new Gauge({
      name: "prefixguard_gateway_publish_path",
      help: "Where the gateway's observations go now: 1 on the path in use (direct: straight to the bus; outbox: through its database until the relay has drained it)",
      labelNames: ["path"],
      registers: [options.registry],
    });
    this.publishedStraight = new Counter({
      name: "prefixguard_gateway_events_published_total",
      help: "Events the gateway published straight to the bus (those that went through its outbox are counted by its relay, prefixguard_relay_events_published_total)",
      registers: [options.registry],
    });
    this.setPath("direct");
    this.opened = this.openUntilStopped();
  }

  /** Starts opening the database in the background; the gateway serves meanwhile. */
  static start(options: ObservationOutboxOptions): ObservationOutbox {
    return new ObservationOutbox(options);
  }

  enqueue(events: ObservationEvents): void {
    const { unobserved, maxQueued } = this.options;
    if (this.state === "stopped" || (this.path === "outbox" && this.state === "down")) {
      unobserved.count("outbox_unavailable");
      return;
    }
    if (this.queue.length >= maxQueued) {
      unobserved.count("outbox_full");
      return;
    }
    this.queue.push(entriesOf(events, traceHeaders(), this.options.now()));
    if (this.canFlush()) this.scheduleFlush();
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
    const couldFlush = this.canFlush();
    this.state = "stopped";
    this.cancelReopenWait?.();
    if (this.lingering !== null) {
      clearTimeout(this.lingering);
      this.lingering = null;
    }
    if (couldFlush) {
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
            "gateway database unavailable: traffic flows; observations go straight to the bus, and are dropped while the bus refuses them until it opens",
          );
        this.state = "down";
        // Straight to the bus, the queue does not wait for the database.
        if (this.path === "outbox") await this.dropQueued("outbox_unavailable");
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

  /** Batches can leave now: straight to the bus, or to an open database. */
  private canFlush(): boolean {
    return this.state !== "stopped" && (this.path === "direct" || this.state === "open");
  }

  private setPath(path: Path): void {
    this.path = path;
    this.pathGauge.set({ path: "direct" }, path === "direct" ? 1 : 0);
    this.pathGauge.set({ path: "outbox" }, path === "outbox" ? 1 : 0);
  }

  /** The batch on the bus, as the relay would publish it, each topic's messages in order. */
  private async publishDirect(entries: readonly OutboxEntry[]): Promise<void> {
    const byTopic = new Map<string, OutgoingMessage[]>();
    for (const entry of entries) {
      let messages = byTopic.get(entry.topic);
      if (messages === undefined) {
        messages = [];
        byTopic.set(entry.topic, messages);
      }
      messages.push(
        relayedMessage({ key: entry.key, value: entry.value, headers: entry.headers ?? {} }, this.publisherId),
      );
    }
    await Promise.all([...byTopic].map(([topic, messages]) => this.options.bus.publish(topic, messages)));
  }

  /**
   * Back to the bus once the relay has published every outbox row (this replica's and any other's),
   * so nothing published straight can overtake an event still waiting in the table. Asked at most
   * every DRAINED_CHECK_MS; when the count fell since the last time (the relay reaches the bus
   * again), new batches wait in the queue, up to the deadline, for it to reach zero.
   */
  private async returnToBusWhenDrained(db: Database): Promise<void> {
    const startedMs = this.options.now();
    if (startedMs - this.drainedCheckedAtMs < DRAINED_CHECK_MS) return;
    this.drainedCheckedAtMs = startedMs;
    const source = tableOutboxSource(db);
    const count = () => withDeadline(source.countUnpublished(), this.options.timeoutMs, "counting the outbox");
    try {
      let waiting = await count();
      const draining = waiting < this.lastUnpublished;
      this.lastUnpublished = waiting;
      while (waiting > 0 && draining && this.options.now() - startedMs < this.options.timeoutMs) {
        await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
        waiting = await count();
      }
      if (waiting > 0) return;
    } catch {
      return;
    }
    this.setPath("direct");
    this.options.logger.info({}, "gateway outbox drained: observations published straight to the bus again");
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

  /**
   * Sends the queue in batches: straight to the bus, or, once a publish failed and until the relay
   * has drained the table, one INSERT each. A batch that can go neither way is dropped and counted.
   * A publish that failed may still have reached some topics: the outbox sends those events again,
   * with the same ce_id (delivery is at least once).
   */
  private async flushQueue(): Promise<void> {
    while (this.queue.length > 0) {
      if (this.path === "outbox" && this.db !== null) await this.returnToBusWhenDrained(this.db);
      const batch = this.takeBatch();
      const entries = batch.flatMap((queued) => queued.entries);
      if (this.path === "direct") {
        try {
          await withDeadline(this.publishDirect(entries), this.options.timeoutMs, "publishing to the bus");
          this.publishedStraight.inc(entries.length);
          continue;
        } catch (error) {
          this.setPath("outbox");
          // The relay needs the broker back before the table can drain: look again in a second,
          // and wait for a drain only once the count starts falling.
          this.drainedCheckedAtMs = this.options.now();
          this.lastUnpublished = 0;
          this.options.logger.warn(
            { err: error instanceof Error ? error.name : typeof error, exchanges: batch.length },
            "gateway bus publish failed: observations go through the outbox until its relay has published them (traffic unaffected)",
          );
        }
      }
      if ((await this.writeOutbox(batch, entries)) === "not_open_yet") {
        // Back at the head of the queue: the database's first open flushes it.
        this.queue.unshift(...batch);
        return;
      }
    }
  }

  private async writeOutbox(
    batch: readonly Queued[],
    entries: readonly OutboxEntry[],
  ): Promise<"done" | "not_open_yet"> {
    const { db } = this;
    if (db === null) {
      if (this.state === "opening") return "not_open_yet";
      for (const _ of batch) this.options.unobserved.count("outbox_unavailable");
      return "done";
    }
    try {
      await withDeadline(
        // Plain SQL, not the query builder: the INSERT is written for every batch.
        withSql(db, (sql) => enqueueOutboxMessages(sql, entries)),
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
    return "done";
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
