import { readFile } from "node:fs/promises";
import { type MessageBus, OutboxRelay, relayLockFor, runEventConsumer, tableOutboxSource } from "@prefix-guard/bus";
import { decodeSessionEvent, newEventId, sha256Hex, Topics } from "@prefix-guard/events";
import { startGrpcServer } from "@prefix-guard/grpc";
import type { Logger } from "@prefix-guard/logging";
import { promptAssemblyMigrations } from "@prefix-guard/migrations/prompt-assembly";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import type { ResolveRequest } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { grpcPeerSecurity, grpcServerSecurity, openMetrics, openServiceDatabase } from "@prefix-guard/runtime";
import { Counter } from "prom-client";
import { grpcRulesResolver, grpcSessionEventsReader } from "./adapters/grpc/peer-clients";
import { promptAssemblyRegistration } from "./adapters/grpc/prompt-assembly-grpc";
import { PromptBuilder } from "./application/build-request";
import { SessionProjection } from "./application/session-projection";
import type { PromptAssemblyConfig } from "./config";

/**
 * Benchmark baseline (ASSEMBLY_POLICY=naive): the rules source as it is right now, the way the
 * engine read AGENTS.md before snapshots; a missing file reads as no rules.
 */
export async function readRulesRawNow(source: ResolveRequest["source"]): Promise<string> {
  if (source === undefined) return "";
  if (source.$case === "content") return source.value.text;
  try {
    return await readFile(source.value.path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "";
    throw error;
  }
}

export interface RunningPromptAssembly {
  readonly address: string;
  readonly builder: PromptBuilder;
  stop(): Promise<void>;
}

/**
 * Composition root: the projection fed by session.events.v1 (catching up through ReadEvents on a
 * gap), the builder with its Resolve and ReadEvents peers, the prefix-event relay, gRPC.
 */
export async function startPromptAssembly(
  config: PromptAssemblyConfig,
  deps: { bus: MessageBus; logger: Logger; now?: () => number },
): Promise<RunningPromptAssembly> {
  const { bus, logger } = deps;
  const now = deps.now ?? Date.now;
  const db = await openServiceDatabase(config.DATABASE_URL, promptAssemblyMigrations, logger);
  const peerSecurity = grpcPeerSecurity(config);
  const rules = grpcRulesResolver(config.RULES_SNAPSHOT_ADDRESS, peerSecurity);
  const sessions = grpcSessionEventsReader(config.SESSION_EVENTS_ADDRESS, config.READ_EVENTS_DEADLINE_MS, peerSecurity);
  const projection = new SessionProjection({ db, now });
  const builder = new PromptBuilder({
    db,
    projection,
    rules,
    sessions,
    now,
    sha256: sha256Hex,
    logger,
    newEventId: () => newEventId(now()),
    ...(config.ASSEMBLY_POLICY === "naive" ? { readRulesRaw: readRulesRawNow } : {}),
    options: {
      policy: config.ASSEMBLY_POLICY,
      minSeqWaitMs: config.MIN_SEQ_WAIT_MS,
      currentDatePosition: config.CURRENT_DATE_POSITION,
      canonicalToolOrder: config.CANONICAL_TOOL_ORDER,
      rulesTimeoutMs: config.RESOLVE_DEADLINE_MS,
      anthropicCacheMinimums: config.ANTHROPIC_CACHE_MINIMUMS,
    },
  });
  const metrics = await openMetrics("prompt-assembly", config, logger);
  const builds = new Counter({
    name: "prompt_builds_total",
    help: "BuildRequest calls served, by wire format.",
    labelNames: ["format"] as const,
    registers: [metrics.registry],
  });
  const prefixChanges = new Counter({
    name: "prompt_prefix_changes_total",
    help: "Builds whose prefix changed against the session's previous build, by changed section (or tools / history).",
    labelNames: ["section"] as const,
    registers: [metrics.registry],
  });
  const checkpointsDue = new Counter({
    name: "prompt_checkpoint_due_total",
    help: "Builds whose history tail exceeded the checkpoint threshold.",
    registers: [metrics.registry],
  });
  const relay = new OutboxRelay({
    source: tableOutboxSource(db),
    bus,
    lock: relayLockFor(db, "prefix-guard:prompt-assembly:relay"),
    logger,
    now,
  });
  relay.start();
  const consumer = await runEventConsumer({
    bus,
    topic: Topics.sessionEvents,
    groupId: config.CONSUMER_GROUP,
    logger,
    decode: decodeSessionEvent,
    maxMessageBytes: config.BUS_MAX_MESSAGE_BYTES,
    onOutcome: (outcome) => metrics.eventsConsumed.inc({ consumer: config.CONSUMER_GROUP, outcome }),
    apply: async (event) => {
      metrics.eventApplyDelay.observe(
        { consumer: config.CONSUMER_GROUP },
        Math.max(0, Date.now() - event.occurredAtMs) / 1000,
      );
      await projection.applyOrCatchUp(event, sessions);
    },
  });
  const server = await startGrpcServer({
    ...grpcServerSecurity(config),
    host: config.GRPC_HOST,
    // Sections, tools and reported rules together; the per-field bounds are checked in validation.
    maxReceiveMessageBytes: 4 * 1024 * 1024,
    port: config.GRPC_PORT,
    logger,
    services: [
      promptAssemblyRegistration({
        builder,
        projection,
        sessions,
        afterBuild: (request, response) => {
          relay.notify();
          builds.inc({
            format: (WireFormat[request.wireFormat] ?? "unknown").replace("WIRE_FORMAT_", "").toLowerCase(),
          });
          if (response.checkpointDue) checkpointsDue.inc();
          if (response.prefix?.changed) {
            const sections = [
              ...response.prefix.changedSections,
              ...(response.prefix.toolsChanged ? ["tools"] : []),
              ...(response.prefix.historyRewritten ? ["history"] : []),
            ];
            for (const section of sections) prefixChanges.inc({ section });
          }
        },
      }),
    ],
    metrics: metrics.registry,
  });
  logger.info({ address: server.address }, "prompt-assembly serving");
  return {
    address: server.address,
    builder,
    async stop() {
      await server.shutdown(config.SHUTDOWN_GRACE_MS);
      await consumer.stop();
      await relay.stop();
      await metrics.close();
      rules.close();
      sessions.close();
      await db.destroy();
    },
  };
}
