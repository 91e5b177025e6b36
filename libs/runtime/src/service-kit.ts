// What every service process starts the same way, in the same order, and stops in the reverse
// order: its database (migrated), its metrics, its outbox relay, its event consumers and its gRPC
// server. A service's service.ts declares only what is its own (the use cases and their wiring);
// a failed start releases whatever had been started, so a half-started process leaks nothing.

import {
  type EventConsumerOptions,
  type MessageBus,
  type OutboxRelay,
  type OutboxSource,
  PoisonMessageError,
  runEventConsumer,
  type Subscription,
} from "@prefix-guard/bus";
import type { Database, DatabaseOptions, Migration } from "@prefix-guard/db";
import { UnavailableError } from "@prefix-guard/errors";
import { type RunningGrpcServer, type ServiceRegistration, startGrpcServer } from "@prefix-guard/grpc";
import type { Logger } from "@prefix-guard/logging";
import { openMetrics, type ServiceMetrics } from "./metrics";
import { applyMigrationsAtStart, openServiceDatabase } from "./open-database";
import { startServiceRelay } from "./outbox-relay";
import { grpcServerSecurity, type SecurityConfig } from "./security";

const CONSUME_OUTCOMES = ["applied", "dead_lettered"] as const;

export interface ServiceKitConfig extends SecurityConfig {
  readonly DATABASE_URL: string;
  readonly GRPC_HOST: string;
  readonly GRPC_PORT: number;
  readonly METRICS_PORT: number;
  readonly SHUTDOWN_GRACE_MS: number;
  readonly CONSUMER_PARTITIONS_CONCURRENTLY: number;
  readonly CONSUMER_COMMIT_INTERVAL_MS: number;
  /** Published outbox rows older than this are deleted by the relay; absent = its default (24 h). */
  readonly OUTBOX_RETENTION_MS?: number | undefined;
  /** Leases the outbox relay is split over; absent = 1. */
  readonly RELAY_LEASES?: number | undefined;
  readonly DATABASE_MIGRATIONS?: "apply" | "verify" | undefined;
  readonly DATABASE_MIGRATIONS_WAIT_MS?: number | undefined;
}

export interface ServiceKitOptions {
  readonly migrations: readonly Migration[];
  readonly database?: DatabaseOptions;
  readonly bus: MessageBus;
  readonly logger: Logger;
  readonly now: () => number;
}

export class ServiceKit {
  /** LIFO: the last thing started is the first stopped. */
  private readonly stops: Array<() => Promise<void>> = [];
  private stopped = false;

  private constructor(
    readonly name: string,
    private readonly config: ServiceKitConfig,
    private readonly options: ServiceKitOptions,
    readonly db: Database,
    readonly metrics: ServiceMetrics,
  ) {
    this.onStop(() => db.destroy());
    this.onStop(() => metrics.close());
  }

  /** Opens (and migrates) the database and the metrics endpoint. */
  static async open(name: string, config: ServiceKitConfig, options: ServiceKitOptions): Promise<ServiceKit> {
    const db = await openServiceDatabase(config.DATABASE_URL, options.migrations, options.logger, options.database, {
      mode: config.DATABASE_MIGRATIONS ?? applyMigrationsAtStart.mode,
      waitMs: config.DATABASE_MIGRATIONS_WAIT_MS ?? applyMigrationsAtStart.waitMs,
    });
    try {
      const metrics = await openMetrics(name, config, options.logger);
      return new ServiceKit(name, config, options, db, metrics);
    } catch (error) {
      await db.destroy();
      throw error;
    }
  }

  get logger(): Logger {
    return this.options.logger;
  }

  /** Registers a stop step; it runs before every step registered earlier. */
  onStop(stop: () => Promise<void>): void {
    this.stops.push(stop);
  }

  /**
   * The outbox relay of this service, started, split over RELAY_LEASES leases; each is published by
   * one process at a time (DB locks), and replicas split them. Counted in the shared prefixguard_relay_events_published_total and
   * prefixguard_relay_backlog_events (rows written but not yet published: the relay's lag).
   */
  startRelay(options: { source: OutboxSource; batchSize?: number }): OutboxRelay {
    const relay = startServiceRelay({
      name: this.name,
      db: this.db,
      source: options.source,
      bus: this.options.bus,
      registry: this.metrics.registry,
      logger: this.options.logger,
      now: this.options.now,
      retentionMs: this.config.OUTBOX_RETENTION_MS,
      batchSize: options.batchSize,
      leases: this.config.RELAY_LEASES,
    });
    this.onStop(() => relay.stop());
    return relay;
  }

  /**
   * A consumer of one topic with this process's partition concurrency, always counted in the shared
   * prefixguard_events_consumed_total under its group (and in the service's own counter when it has one).
   * Each applied event's delay since it occurred goes to prefixguard_event_apply_delay_seconds, and an
   * error `isPoison` recognises (one that retrying can never fix) sends the event to the DLQ instead of
   * holding its partition.
   */
  async consume<E extends { readonly occurredAtMs: number }>(
    options: Omit<
      EventConsumerOptions<E>,
      "bus" | "logger" | "partitionsConcurrently" | "commitIntervalMs" | "onOutcome"
    > & {
      readonly onOutcome?: EventConsumerOptions<E>["onOutcome"];
      readonly isPoison?: (error: unknown) => boolean;
    },
  ): Promise<Subscription> {
    // Both outcomes at 0 from the start: a DLQ alert on increase() sees its series before the first dead letter.
    for (const outcome of CONSUME_OUTCOMES) this.metrics.eventsConsumed.inc({ consumer: options.groupId, outcome }, 0);
    const { isPoison, apply } = options;
    const applyDelay = this.metrics.eventApplyDelay.labels({ consumer: options.groupId });
    const subscription = await runEventConsumer({
      ...options,
      apply: async (events, messages) => {
        try {
          await apply(events, messages);
        } catch (error) {
          if (isPoison?.(error) === true)
            throw new PoisonMessageError(error instanceof Error ? error.message : String(error), { cause: error });
          throw error;
        }
        const appliedAtMs = Date.now();
        for (const event of events) applyDelay.observe(Math.max(0, appliedAtMs - event.occurredAtMs) / 1000);
      },
      bus: this.options.bus,
      logger: this.options.logger,
      partitionsConcurrently: this.config.CONSUMER_PARTITIONS_CONCURRENTLY,
      commitIntervalMs: this.config.CONSUMER_COMMIT_INTERVAL_MS,
      onOutcome: (outcome, count) => {
        this.metrics.eventsConsumed.inc({ consumer: options.groupId, outcome }, count);
        options.onOutcome?.(outcome, count);
      },
    }).catch((error: unknown) => {
      throw new UnavailableError(`cannot subscribe to ${options.topic}`, { cause: error });
    });
    this.onStop(() => subscription.stop());
    return subscription;
  }

  /** The gRPC server with this service's security, metrics and registrations; stops first. */
  async serve(
    services: readonly ServiceRegistration[],
    options: { readonly maxReceiveMessageBytes: number },
  ): Promise<RunningGrpcServer> {
    const server = await startGrpcServer({
      ...grpcServerSecurity(this.config, this.options.logger),
      now: this.options.now,
      host: this.config.GRPC_HOST,
      port: this.config.GRPC_PORT,
      logger: this.options.logger,
      maxReceiveMessageBytes: options.maxReceiveMessageBytes,
      services: [...services],
      metrics: this.metrics.registry,
    });
    this.onStop(() => server.shutdown(this.config.SHUTDOWN_GRACE_MS));
    this.options.logger.info({ address: server.address }, `${this.name} serving`);
    return server;
  }

  /** Runs `start`; when it throws, stops whatever it had started and rethrows. */
  async starting<T>(start: () => Promise<T>): Promise<T> {
    try {
      return await start();
    } catch (error) {
      await this.stop().catch(() => undefined);
      throw error;
    }
  }

  /** Stops everything in reverse order of start; every step runs even when one fails. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    let firstError: unknown;
    for (const stop of [...this.stops].reverse()) {
      try {
        await stop();
      } catch (error) {
        firstError ??= error;
      }
    }
    if (firstError !== undefined) throw firstError;
  }
}
