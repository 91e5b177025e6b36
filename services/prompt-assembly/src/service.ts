import { createHash } from "node:crypto";
import { type MessageBus, OutboxRelay, relayLockFor, runEventConsumer, tableOutboxSource } from "@prefix-guard/bus";
import { decodeSessionEvent, newEventId, Topics } from "@prefix-guard/events";
import { startGrpcServer } from "@prefix-guard/grpc";
import type { Logger } from "@prefix-guard/logging";
import { promptAssemblyMigrations } from "@prefix-guard/migrations/prompt-assembly";
import { grpcPeerSecurity, grpcServerSecurity, openServiceDatabase } from "@prefix-guard/runtime";
import { grpcRulesResolver, grpcSessionEventsReader } from "./adapters/grpc/peer-clients";
import { promptAssemblyRegistration } from "./adapters/grpc/prompt-assembly-grpc";
import { PromptBuilder } from "./application/build-request";
import { SessionProjection } from "./application/session-projection";
import type { PromptAssemblyConfig } from "./config";

export interface RunningPromptAssembly {
  readonly address: string;
  readonly builder: PromptBuilder;
  stop(): Promise<void>;
}

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

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
    sha256,
    logger,
    newEventId: () => newEventId(now()),
    options: {
      minSeqWaitMs: config.MIN_SEQ_WAIT_MS,
      currentDatePosition: config.CURRENT_DATE_POSITION,
      canonicalToolOrder: config.CANONICAL_TOOL_ORDER,
      rulesTimeoutMs: config.RESOLVE_DEADLINE_MS,
    },
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
    apply: async (event) => {
      await projection.applyOrCatchUp(event, sessions);
    },
  });
  const server = await startGrpcServer({
    ...grpcServerSecurity(config),
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    logger,
    services: [promptAssemblyRegistration({ builder, projection, sessions, afterBuild: () => relay.notify() })],
  });
  logger.info({ address: server.address }, "prompt-assembly serving");
  return {
    address: server.address,
    builder,
    async stop() {
      await server.shutdown(config.SHUTDOWN_GRACE_MS);
      await consumer.stop();
      await relay.stop();
      rules.close();
      sessions.close();
      await db.destroy();
    },
  };
}
