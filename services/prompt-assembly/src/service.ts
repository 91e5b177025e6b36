import { type MessageBus, tableOutboxSource, traceHeaders } from "@prefix-guard/bus";
import type { Database } from "@prefix-guard/db";
import { NotFoundError } from "@prefix-guard/errors";
import { decodeSessionEvent, newEventId, sha256Hex, Topics } from "@prefix-guard/events";
import type { Logger } from "@prefix-guard/logging";
import { promptAssemblyMigrations } from "@prefix-guard/migrations/prompt-assembly";
import { loadProviderCatalogue } from "@prefix-guard/providers/load";
import { grpcPeerSecurity, ServiceKit } from "@prefix-guard/runtime";
import type { Registry } from "prom-client";
import { grpcRulesResolver, grpcSessionEventsReader } from "./adapters/grpc/peer-clients";
import { promptAssemblyRegistration } from "./adapters/grpc/prompt-assembly-grpc";
import { PromptAssemblyMetrics } from "./adapters/metrics/prompt-assembly-metrics";
import { FingerprintStore } from "./adapters/mysql/fingerprint-store";
import { ProjectionStore } from "./adapters/mysql/projection-store";
import { PromptBuilder } from "./application/build-request/build-request";
import { ANCHOR_TO_FIRST_USER_MESSAGE, type DateAnchoring } from "./application/build-request/dates";
import { DurablePrefixMemory, type PrefixMemory } from "./application/build-request/prefix-memory";
import { snapshotRulesSource, type WorkspaceRulesSource } from "./application/build-request/rules";
import { SessionViews } from "./application/build-request/session-views";
import { SealedEventOpener } from "./application/sealed-events";
import { SessionProjection } from "./application/session-projection";
import type { PromptAssemblyConfig } from "./config";

export interface RunningPromptAssembly {
  readonly address: string;
  readonly builder: PromptBuilder;
  readonly views: SessionViews;
  /** Its Prometheus registry (served on METRICS_PORT when > 0). */
  readonly metrics: Registry;
  stop(): Promise<void>;
}

/**
 * The three places where the product's behaviour differs from the seeds' "before". The product
 * wires rules-snapshot's frozen section, the durable prefix memory and the first-user-message date
 * anchor; the replay benchmark (bench/src/replay) wires its baseline through the same ports.
 */
export interface AssemblyPorts {
  readonly rules: WorkspaceRulesSource;
  readonly prefixMemory: PrefixMemory;
  readonly dates: DateAnchoring;
}

export type AssemblyPortOverrides = (context: { db: Database; now: () => number }) => Partial<AssemblyPorts>;

/**
 * Composition root: the projection fed by session.events.v1 (catching up through ReadEvents on a
 * gap), the builder with its Resolve and ReadEvents peers, the prefix-event relay, gRPC.
 */
export async function startPromptAssembly(
  config: PromptAssemblyConfig,
  deps: { bus: MessageBus; logger: Logger; now?: () => number; ports?: AssemblyPortOverrides },
): Promise<RunningPromptAssembly> {
  const { logger } = deps;
  const now = deps.now ?? Date.now;
  const kit = await ServiceKit.open("prompt-assembly", config, {
    migrations: promptAssemblyMigrations,
    // Several statements per query: a build's fingerprints are recorded in two round trips.
    database: { multipleStatements: true },
    bus: deps.bus,
    logger,
    now,
  });
  return kit.starting(async () => {
    const db = kit.db;
    const peerSecurity = grpcPeerSecurity(config);
    const resolver = grpcRulesResolver(config.RULES_SNAPSHOT_ADDRESS, peerSecurity);
    const sessions = grpcSessionEventsReader(
      config.SESSION_EVENTS_ADDRESS,
      config.READ_EVENTS_DEADLINE_MS,
      peerSecurity,
      config.DATA_KEYS_DEADLINE_MS,
    );
    kit.onStop(async () => {
      resolver.close();
      sessions.close();
    });
    const projectionStore = new ProjectionStore(db);
    // Set once the views exist (its gauges read them at each scrape, never before).
    let views: SessionViews | undefined;
    const metrics = new PromptAssemblyMetrics(
      kit.metrics.registry,
      () => views?.stats() ?? { bytes: 0, sessions: 0 },
      config.METRICS_WORKSPACE_LABELS,
    );
    // One opener (and key cache) for the consumer and the builds: a key fetched by one serves both.
    const opener = new SealedEventOpener(sessions, {
      maxKeys: config.DATA_KEY_CACHE_ENTRIES,
      onContentErased: (_event, state) => metrics.contentErased(state),
    });
    views = new SessionViews({
      store: projectionStore,
      sessions,
      cacheBytes: config.VIEW_CACHE_BYTES,
      opener,
    });
    const overrides = deps.ports?.({ db, now }) ?? {};
    const prefixMemory =
      overrides.prefixMemory ??
      new DurablePrefixMemory({
        store: new FingerprintStore(db),
        now,
        newEventId: () => newEventId(now()),
        traceHeaders: () => traceHeaders(),
        cacheBytes: config.PREFIX_CACHE_BYTES,
        logger,
      });
    // The projection says which sessions were removed or re-created; the builder's prefix memory,
    // which owns the fingerprints, forgets theirs.
    const projection = new SessionProjection({
      store: projectionStore,
      now,
      onSessionsReset: (sessionIds) => prefixMemory.forget(sessionIds),
      opener,
    });
    const builder = new PromptBuilder({
      views,
      rules: overrides.rules ?? snapshotRulesSource(resolver, { timeoutMs: config.RESOLVE_DEADLINE_MS, logger }),
      prefixMemory,
      dates: overrides.dates ?? ANCHOR_TO_FIRST_USER_MESSAGE,
      now,
      sha256: sha256Hex,
      logger,
      observeStage: (stage, ms) => metrics.stageTook(stage, ms),
      observePrefixBreaks: (breaks, workspace) => metrics.prefixBroke(breaks, workspace),
      options: {
        rulesTextCacheBytes: config.RULES_TEXT_CACHE_BYTES,
        repinWhenCold: config.REPIN_WHEN_COLD,
        catalogue: loadProviderCatalogue(config.PROVIDER_CATALOGUE_FILE),
      },
    });
    kit.startRelay({ source: tableOutboxSource(db) });
    // Before the relay stops: pending fingerprint groups are written (with their outbox rows) first.
    kit.onStop(() => prefixMemory.close());
    await kit.consume({
      topic: Topics.sessionEvents,
      groupId: config.CONSUMER_GROUP,
      decode: decodeSessionEvent,
      maxMessageBytes: config.BUS_MAX_MESSAGE_BYTES,
      // One transaction per batch of a partition; partitions apply side by side.
      apply: async (events) => {
        await projection.applyOrCatchUp(events, sessions);
        views.forgetEnded(events);
      },
      // A gap session-events cannot fill (it does not know the session) never heals: retrying would
      // hold the partition forever. The consumer then applies the batch event by event and sends only
      // the event it cannot place to the DLQ.
      isPoison: (error) => error instanceof NotFoundError,
    });
    const server = await kit.serve(
      [
        promptAssemblyRegistration({
          builder,
          projection,
          views,
          sessions,
          // The relay is not woken per build: its 100 ms poll publishes a build's events in batches,
          // off the path of the builds that follow.
          afterBuild: (request, response) => metrics.built(request, response),
        }),
      ],
      // Sections, tools and reported rules together; the per-field bounds are checked in validation.
      { maxReceiveMessageBytes: 4 * 1024 * 1024 },
    );
    return { address: server.address, builder, views, metrics: kit.metrics.registry, stop: () => kit.stop() };
  });
}
