import { type MessageBus, tableOutboxSource } from "@prefix-guard/bus";
import { errorMessage, NotFoundError } from "@prefix-guard/errors";
import { decodeSessionEvent, Topics } from "@prefix-guard/events";
import type { Logger } from "@prefix-guard/logging";
import { promptAssemblyMigrations } from "@prefix-guard/migrations/prompt-assembly";
import { ServiceKit } from "@prefix-guard/runtime";
import type { Registry } from "prom-client";
import { promptAssemblyRegistration } from "./adapters/grpc/prompt-assembly-grpc";
import type { PromptBuilder } from "./application/build-request/build-request";
import type { SessionViews } from "./application/build-request/session-views";
import { type AssemblyPortOverrides, assemblyBuilder, assemblyPeers } from "./assembly-parts";
import type { PromptAssemblyConfig } from "./config";

export type { AssemblyPortOverrides, AssemblyPorts } from "./assembly-parts";

export interface RunningPromptAssembly {
  readonly address: string;
  readonly builder: PromptBuilder;
  readonly views: SessionViews;
  /** Its Prometheus registry (served on METRICS_PORT when > 0). */
  readonly metrics: Registry;
  stop(): Promise<void>;
}

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
    const peers = assemblyPeers(config, kit);
    const overrides = deps.ports?.({ db: kit.db, now }) ?? {};
    const { metrics, views, prefixMemory, projection, builder } = assemblyBuilder(config, {
      kit,
      peers,
      logger,
      now,
      overrides,
    });
    kit.startRelay({ source: tableOutboxSource(kit.db) });
    // Before the relay stops: pending fingerprint groups are written (with their outbox rows) first.
    kit.onStop(() => prefixMemory.close());
    await kit.consume({
      topic: Topics.sessionEvents,
      groupId: config.CONSUMER_GROUP,
      decode: decodeSessionEvent,
      maxMessageBytes: config.BUS_MAX_MESSAGE_BYTES,
      // One transaction for the batches of every partition handed over together (apply-groups.ts).
      applyPartitionsTogether: true,
      apply: async (events) => {
        await projection.applyOrCatchUp(events, peers.sessions);
        views.forgetEnded(events);
      },
      // A gap session-events cannot fill (it does not know the session) never heals: retrying would
      // hold the partition forever. The consumer then applies the batch event by event and sends only
      // the event it cannot place to the DLQ.
      isPoison: (error) => error instanceof NotFoundError,
    });
    if (config.FOLLOW_SESSION_EVENTS) {
      const following = peers.sessions.follow(
        config.SESSION_EVENTS_FOLLOW_ADDRESS ?? config.SESSION_EVENTS_ADDRESS,
        (events) => {
          void views.extendHeld(events).then((outcomes) => metrics.followed(outcomes));
        },
        (error) =>
          logger.debug(
            { err: errorMessage(error) },
            "FollowEvents stream ended; reopening (builds read events meanwhile)",
          ),
      );
      kit.onStop(async () => following.close());
    }
    const server = await kit.serve(
      [
        promptAssemblyRegistration({
          builder,
          projection,
          views,
          sessions: peers.sessions,
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
