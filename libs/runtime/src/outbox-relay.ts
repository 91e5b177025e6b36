// A service's outbox relay with the metrics every relay shows. ServiceKit starts one for the
// services whose database must be up before they serve; the gateway, which serves whether or not
// its database is up, starts one once its database opens.

import { type MessageBus, OutboxRelay, type OutboxSource, relayLeasesFor } from "@prefix-guard/bus";
import type { Database } from "@prefix-guard/db";
import type { Logger } from "@prefix-guard/logging";
import { Counter, Gauge, type Registry } from "prom-client";

export interface ServiceRelayOptions {
  /** The service's name: its relay locks are named from `prefix-guard:<name>:relay` (relay-locks.ts). */
  readonly name: string;
  readonly db: Database;
  readonly source: OutboxSource;
  readonly bus: MessageBus;
  readonly registry: Registry;
  readonly logger: Logger;
  readonly now: () => number;
  /** Published rows are deleted after this; absent = the relay's default (24 h). */
  readonly retentionMs?: number | undefined;
  readonly batchSize?: number | undefined;
  /** Leases the relay is split over (RELAY_LEASES); absent = 1, one replica publishes everything. */
  readonly leases?: number | undefined;
}

/**
 * The relay, started; each of its leases is published by one process at a time (DB locks), and the
 * replicas split the leases. Counted in the shared prefixguard_relay_events_published_total,
 * prefixguard_relay_backlog_events (rows written but not yet published: the relay's lag, for the
 * whole service) and prefixguard_relay_leases_held (this process's leases). Stop it with its own stop().
 */
export function startServiceRelay(options: ServiceRelayOptions): OutboxRelay {
  const registers = [options.registry];
  const published = new Counter({
    name: "prefixguard_relay_events_published_total",
    help: "Outbox events the relay published to the bus.",
    registers,
  });
  const source = options.source;
  new Gauge({
    name: "prefixguard_relay_backlog_events",
    help: "Outbox events written but not yet published (grows while the broker is down or the relay is stalled).",
    registers,
    async collect() {
      try {
        this.set(await source.countUnpublished());
      } catch {
        // The last value stays: a scrape must still answer (with every other series) while the
        // database is down, and the relay's own warnings say why the backlog is not moving.
      }
    },
  });
  const relay = new OutboxRelay({
    ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
    source,
    bus: options.bus,
    leases: relayLeasesFor(options.db, `prefix-guard:${options.name}:relay`, options.leases ?? 1),
    logger: options.logger,
    now: options.now,
    ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
    onPublished: (count) => published.inc(count),
  });
  new Gauge({
    name: "prefixguard_relay_leases_held",
    help: "Relay leases this process holds (RELAY_LEASES in all, split between the replicas).",
    registers,
    collect() {
      this.set(relay.leasesHeld());
    },
  });
  relay.start();
  return relay;
}
