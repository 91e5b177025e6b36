import { type MessageBus, PoisonMessageError, tableOutboxSource, traceHeaders } from "@prefix-guard/bus";
import type { Database } from "@prefix-guard/db";
import { NotFoundError } from "@prefix-guard/errors";
import { decodeSessionEvent, newEventId, sha256Hex, Topics } from "@prefix-guard/events";
import type { Logger } from "@prefix-guard/logging";
import { promptAssemblyMigrations } from "@prefix-guard/migrations/prompt-assembly";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { loadProviderCatalogue } from "@prefix-guard/providers/load";
import { grpcPeerSecurity, ServiceKit } from "@prefix-guard/runtime";
import { BoundedLabelValues } from "@prefix-guard/telemetry";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { grpcRulesResolver, grpcSessionEventsReader } from "./adapters/grpc/peer-clients";
import { promptAssemblyRegistration } from "./adapters/grpc/prompt-assembly-grpc";
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
    const metrics = kit.metrics;
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
    const erasedContent = new Counter({
      name: "prefixguard_erased_content_events_total",
      help: "Session events applied without their content because the session's data key was destroyed (erased) or is unknown to session-events.",
      labelNames: ["key_state"] as const,
      registers: [metrics.registry],
    });
    // One opener (and key cache) for the consumer and the builds: a key fetched by one serves both.
    const opener = new SealedEventOpener(sessions, {
      maxKeys: config.DATA_KEY_CACHE_ENTRIES,
      onContentErased: (_event, state) => erasedContent.inc({ key_state: state }),
    });
    const views = new SessionViews({
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
    const stageSeconds = new Histogram({
      name: "prefixguard_build_stage_seconds",
      help: "Time spent in each stage of BuildRequest (load_view and resolve_rules run at the same time).",
      labelNames: ["stage"] as const,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [metrics.registry],
    });
    new Gauge({
      name: "prefixguard_view_cache_bytes",
      help: "Estimated memory held by session views kept between builds (bounded by VIEW_CACHE_BYTES).",
      registers: [metrics.registry],
      collect() {
        this.set(views.stats().bytes);
      },
    });
    new Gauge({
      name: "prefixguard_view_cache_sessions",
      help: "Sessions whose view is held in memory.",
      registers: [metrics.registry],
      collect() {
        this.set(views.stats().sessions);
      },
    });
    const builds = new Counter({
      name: "prefixguard_builds_total",
      help: "BuildRequest calls served, by wire format.",
      labelNames: ["wire_format"] as const,
      registers: [metrics.registry],
    });
    const prefixBreaks = new Counter({
      name: "prefixguard_prefix_breaks_total",
      help: "Builds whose cacheable prefix changed against the session's previous build, once per changed section (key, or tools / history / model) and cause; expected=true for a committed compaction's rewrite and re-pin.",
      labelNames: ["section", "cause", "expected"] as const,
      registers: [metrics.registry],
    });
    const workspaceLabels = new BoundedLabelValues(config.METRICS_WORKSPACE_LABELS);
    const workspaceBreaks = new Counter({
      name: "prefixguard_workspace_prefix_breaks_total",
      help: "Builds whose cacheable prefix changed, by workspace (the first METRICS_WORKSPACE_LABELS seen; later ones as (other)); expected=false when any change was avoidable.",
      labelNames: ["workspace", "expected"] as const,
      registers: [metrics.registry],
    });
    const checkpointsDue = new Counter({
      name: "prefixguard_checkpoints_due_total",
      help: "Builds whose history tail exceeded the checkpoint threshold (the harness should compact).",
      registers: [metrics.registry],
    });
    const dateNoticeBuilds = new Counter({
      name: "prefixguard_date_notice_builds_total",
      help: "Builds whose body carries at least one <date-change> notice (the local date moved during the session).",
      registers: [metrics.registry],
    });
    const droppedTurnBuilds = new Counter({
      name: "prefixguard_dropped_turn_builds_total",
      help: "Builds whose history window dropped turns that no summary covers (the harness compacted too late).",
      registers: [metrics.registry],
    });
    const builder = new PromptBuilder({
      views,
      rules: overrides.rules ?? snapshotRulesSource(resolver, { timeoutMs: config.RESOLVE_DEADLINE_MS, logger }),
      prefixMemory,
      dates: overrides.dates ?? ANCHOR_TO_FIRST_USER_MESSAGE,
      now,
      sha256: sha256Hex,
      logger,
      observeStage: (stage, ms) => stageSeconds.observe({ stage }, ms / 1000),
      observePrefixBreaks: (breaks, workspace) => {
        for (const { section, cause, expected } of breaks)
          prefixBreaks.inc({ section, cause, expected: String(expected) });
        // Once per build: "top workspaces by avoidable breaks" without a session label.
        const avoidable = breaks.some((b) => !b.expected);
        workspaceBreaks.inc({
          workspace: workspaceLabels.valueOf(workspace || "(none)"),
          expected: String(!avoidable),
        });
      },
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
        try {
          await projection.applyOrCatchUp(events, sessions);
        } catch (error) {
          // A gap session-events cannot fill (it does not know the session) never heals: retrying
          // would hold the partition forever. The consumer then applies the batch event by event and
          // sends only the event it cannot place to the DLQ.
          if (error instanceof NotFoundError) throw new PoisonMessageError(error.message, { cause: error });
          throw error;
        }
        views.forgetEnded(events);
        const appliedAt = Date.now();
        for (const event of events) {
          metrics.eventApplyDelay.observe(
            { consumer: config.CONSUMER_GROUP },
            Math.max(0, appliedAt - event.occurredAtMs) / 1000,
          );
        }
      },
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
          afterBuild: (request, response) => {
            builds.inc({
              wire_format: (WireFormat[request.wireFormat] ?? "unknown").replace("WIRE_FORMAT_", "").toLowerCase(),
            });
            if (response.checkpointDue) checkpointsDue.inc();
            if (response.dateNotices.length > 0) dateNoticeBuilds.inc();
            if ((response.history?.droppedTurns ?? 0) > 0) droppedTurnBuilds.inc();
          },
        }),
      ],
      // Sections, tools and reported rules together; the per-field bounds are checked in validation.
      { maxReceiveMessageBytes: 4 * 1024 * 1024 },
    );
    return { address: server.address, builder, views, metrics: metrics.registry, stop: () => kit.stop() };
  });
}
