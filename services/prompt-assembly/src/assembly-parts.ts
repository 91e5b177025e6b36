// The parts service.ts assembles: the two peers a build calls, and the builder with what it reads
// (session views over the projection) and remembers (the last prefix of each session). Every part
// takes its settings here, so service.ts reads as the list of what the service is made of.

import { traceHeaders } from "@prefix-guard/bus";
import type { Database } from "@prefix-guard/db";
import { newEventId, sha256Hex } from "@prefix-guard/events";
import type { Logger } from "@prefix-guard/logging";
import { loadProviderCatalogue } from "@prefix-guard/providers/load";
import { grpcPeerSecurity, type ServiceKit } from "@prefix-guard/runtime";
import { grpcRulesResolver, grpcSessionEventsReader } from "./adapters/grpc/peer-clients";
import { PromptAssemblyMetrics } from "./adapters/metrics/prompt-assembly-metrics";
import { FingerprintStore as SqlFingerprintStore } from "./adapters/mysql/fingerprint-store";
import { ProjectionStore } from "./adapters/mysql/projection-store";
import { type BuilderLogger, PromptBuilder, type PromptBuilderDeps } from "./application/build-request/build-request";
import { ANCHOR_TO_FIRST_USER_MESSAGE, type DateAnchoring } from "./application/build-request/dates";
import { DurablePrefixMemory } from "./application/build-request/prefix-memory";
import { snapshotRulesSource, type WorkspaceRulesSource } from "./application/build-request/rules";
import { SessionViews } from "./application/build-request/session-views";
import type { FingerprintStore } from "./application/ports";
import { type DataKeySource, SealedEventOpener, type SealedEventOpenerOptions } from "./application/sealed-events";
import { type SessionEventsReader, SessionProjection } from "./application/session-projection";
import type { PromptAssemblyConfig } from "./config";

/**
 * The three places where the product's behaviour differs from the seeds' "before". The product
 * wires rules-snapshot's frozen section, the fingerprints stored in the database and the
 * first-user-message date anchor; the replay benchmark (bench/src/replay) wires its baseline
 * through the same ports.
 */
export interface AssemblyPorts {
  readonly rules: WorkspaceRulesSource;
  /** Where each session's last prefix fingerprint is kept, with the PrefixEvents that report it. */
  readonly fingerprints: FingerprintStore;
  readonly dates: DateAnchoring;
}

export type AssemblyPortOverrides = (context: { db: Database; now: () => number }) => Partial<AssemblyPorts>;

/** rules-snapshot's Resolve and session-events' ReadEvents, closed when the service stops. */
export function assemblyPeers(config: PromptAssemblyConfig, kit: ServiceKit) {
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
  return { resolver, sessions };
}

export type AssemblyPeers = ReturnType<typeof assemblyPeers>;

/** What the build path is made of, given its stores, peers and settings. */
export interface AssemblyCoreParts {
  readonly db: Database;
  /** session-events' ReadEvents, for views behind min_seq. */
  readonly sessions: SessionEventsReader;
  /** session-events' GetDataKeys, to open sealed events; null: plaintext events only. */
  readonly keys: DataKeySource | null;
  readonly rules: WorkspaceRulesSource;
  readonly fingerprints: FingerprintStore;
  readonly dates: DateAnchoring;
  readonly now: () => number;
  readonly newEventId: () => string;
  readonly traceHeaders: () => Record<string, string>;
  readonly logger: BuilderLogger;
  readonly viewCacheBytes: number;
  readonly prefixCacheBytes: number;
  readonly opener?: SealedEventOpenerOptions;
  readonly builder?: Pick<PromptBuilderDeps, "options" | "observeStage" | "observePrefixBreaks">;
}

/**
 * The projection the consumer feeds, the views and prefix memory a build reads, and the builder:
 * wired once here, for the service (assemblyBuilder) and for the tests that build through stores.
 */
export function assemblyCore(parts: AssemblyCoreParts) {
  const store = new ProjectionStore(parts.db);
  // One opener (and key cache) for the consumer and the builds: a key fetched by one serves both.
  const opener = new SealedEventOpener(parts.keys, parts.opener);
  const views = new SessionViews({ store, sessions: parts.sessions, cacheBytes: parts.viewCacheBytes, opener });
  const prefixMemory = new DurablePrefixMemory({
    store: parts.fingerprints,
    now: parts.now,
    newEventId: parts.newEventId,
    traceHeaders: parts.traceHeaders,
    cacheBytes: parts.prefixCacheBytes,
    logger: parts.logger,
  });
  // The projection says which sessions were removed or re-created; the builder's prefix memory,
  // which owns the fingerprints, forgets theirs.
  const projection = new SessionProjection({
    store,
    now: parts.now,
    onSessionsReset: (sessionIds) => prefixMemory.forget(sessionIds),
    opener,
  });
  const builder = new PromptBuilder({
    views,
    rules: parts.rules,
    prefixMemory,
    dates: parts.dates,
    now: parts.now,
    sha256: sha256Hex,
    logger: parts.logger,
    ...parts.builder,
  });
  return { store, opener, views, prefixMemory, projection, builder };
}

/** The service's build path, from its config, peers and metrics. */
export function assemblyBuilder(
  config: PromptAssemblyConfig,
  context: {
    kit: ServiceKit;
    peers: AssemblyPeers;
    logger: Logger;
    now: () => number;
    overrides: Partial<AssemblyPorts>;
  },
) {
  const { kit, peers, logger, now, overrides } = context;
  // Set once the views exist (its gauges read them at each scrape, never before).
  let views: SessionViews | undefined;
  const metrics = new PromptAssemblyMetrics(
    kit.metrics.registry,
    () => views?.stats() ?? { bytes: 0, sessions: 0 },
    config.METRICS_WORKSPACE_LABELS,
  );
  const core = assemblyCore({
    db: kit.db,
    sessions: peers.sessions,
    keys: peers.sessions,
    rules: overrides.rules ?? snapshotRulesSource(peers.resolver, { timeoutMs: config.RESOLVE_DEADLINE_MS, logger }),
    fingerprints: overrides.fingerprints ?? new SqlFingerprintStore(kit.db),
    dates: overrides.dates ?? ANCHOR_TO_FIRST_USER_MESSAGE,
    now,
    newEventId: () => newEventId(now()),
    traceHeaders: () => traceHeaders(),
    logger,
    viewCacheBytes: config.VIEW_CACHE_BYTES,
    prefixCacheBytes: config.PREFIX_CACHE_BYTES,
    opener: {
      maxKeys: config.DATA_KEY_CACHE_ENTRIES,
      onContentErased: (_event, state) => metrics.contentErased(state),
    },
    builder: {
      observeStage: (stage, ms) => metrics.stageTook(stage, ms),
      observePrefixBreaks: (breaks, workspace) => metrics.prefixBroke(breaks, workspace),
      options: {
        repinWhenCold: config.REPIN_WHEN_COLD,
        catalogue: loadProviderCatalogue(config.PROVIDER_CATALOGUE_FILE),
      },
    },
  });
  views = core.views;
  return {
    metrics,
    views: core.views,
    prefixMemory: core.prefixMemory,
    projection: core.projection,
    builder: core.builder,
  };
}
