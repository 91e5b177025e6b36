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
import { PromptBuilder } from "./application/build-request/build-request";
import { ANCHOR_TO_FIRST_USER_MESSAGE, type DateAnchoring } from "./application/build-request/dates";
import { DurablePrefixMemory } from "./application/build-request/prefix-memory";
import { snapshotRulesSource, type WorkspaceRulesSource } from "./application/build-request/rules";
import { SessionViews } from "./application/build-request/session-views";
import type { FingerprintStore } from "./application/ports";
import { SealedEventOpener } from "./application/sealed-events";
import { SessionProjection } from "./application/session-projection";
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

/** The projection the consumer feeds, the views and prefix memory a build reads, and the builder. */
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
  const projectionStore = new ProjectionStore(kit.db);
  // Set once the views exist (its gauges read them at each scrape, never before).
  let views: SessionViews | undefined;
  const metrics = new PromptAssemblyMetrics(
    kit.metrics.registry,
    () => views?.stats() ?? { bytes: 0, sessions: 0 },
    config.METRICS_WORKSPACE_LABELS,
  );
  // One opener (and key cache) for the consumer and the builds: a key fetched by one serves both.
  const opener = new SealedEventOpener(peers.sessions, {
    maxKeys: config.DATA_KEY_CACHE_ENTRIES,
    onContentErased: (_event, state) => metrics.contentErased(state),
  });
  views = new SessionViews({
    store: projectionStore,
    sessions: peers.sessions,
    cacheBytes: config.VIEW_CACHE_BYTES,
    opener,
  });
  const prefixMemory = new DurablePrefixMemory({
    store: overrides.fingerprints ?? new SqlFingerprintStore(kit.db),
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
    rules: overrides.rules ?? snapshotRulesSource(peers.resolver, { timeoutMs: config.RESOLVE_DEADLINE_MS, logger }),
    prefixMemory,
    dates: overrides.dates ?? ANCHOR_TO_FIRST_USER_MESSAGE,
    now,
    sha256: sha256Hex,
    logger,
    observeStage: (stage, ms) => metrics.stageTook(stage, ms),
    observePrefixBreaks: (breaks, workspace) => metrics.prefixBroke(breaks, workspace),
    options: {
      repinWhenCold: config.REPIN_WHEN_COLD,
      catalogue: loadProviderCatalogue(config.PROVIDER_CATALOGUE_FILE),
    },
  });
  return { metrics, views, prefixMemory, projection, builder };
}
