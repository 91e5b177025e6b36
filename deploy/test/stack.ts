// One way for tests to start the system in this process: session-events, rules-snapshot,
// prompt-assembly and (optionally) cache-monitor, each on its own database (SQLite files or fresh
// MariaDB databases), on the embedded transport or on real Kafka, with one injectable clock, and
// gRPC clients for each. Everything started is stopped, and every database made is dropped.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials } from "@grpc/grpc-js";
import { createKafkaBus, type MessageBus } from "@prefix-guard/bus";
import { startGroupsAtEnd, testKafkaBrokers, uniqueName } from "@prefix-guard/bus/testing";
import { loadCacheMonitorConfig, startCacheMonitor } from "@prefix-guard/cache-monitor";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { Topics } from "@prefix-guard/events";
import { silentLogger } from "@prefix-guard/logging";
import {
  type AssemblyPortOverrides,
  loadPromptAssemblyConfig,
  type RunningPromptAssembly,
  startPromptAssembly,
} from "@prefix-guard/prompt-assembly";
import { PromptAssemblyClient } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { CacheMonitorClient } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { RulesSnapshotClient } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { loadRulesSnapshotConfig, startRulesSnapshot } from "@prefix-guard/rules-snapshot";
import { defaultTopicSpecs, openBus } from "@prefix-guard/runtime";
import { loadSessionEventsConfig, startSessionEvents } from "@prefix-guard/session-events";

export interface StackOptions {
  /** Where each service keeps its data; default SQLite. */
  readonly store?: "sqlite" | "mariadb";
  /** default "embedded" (its log on the store above); "kafka" uses the test broker with unique groups. */
  readonly transport?: "embedded" | "kafka";
  readonly now?: () => number;
  readonly cacheMonitor?: boolean;
  /** Extra environment for every service. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Authentication: every service reads this principals file (polled every `reloadMs`, default
   * 200 ms so a rotation shows within a test), and prompt-assembly presents `peerToken` to its
   * peers. Without it the services serve the local principal (loopback).
   */
  readonly auth?: { readonly principalsFile: string; readonly peerToken?: string; readonly reloadMs?: number };
  /** Extra environment per service. */
  readonly serviceEnv?: Partial<Record<ServiceName, Readonly<Record<string, string>>>>;
  readonly assemblyPorts?: AssemblyPortOverrides;
}

export type ServiceName = "session-events" | "rules-snapshot" | "prompt-assembly" | "cache-monitor";

export interface Stack {
  readonly addresses: Readonly<Record<ServiceName, string>>;
  readonly sessions: SessionEventsClient;
  /** The current rules-snapshot's client (a new one after restartStateful). */
  readonly rules: RulesSnapshotClient;
  assembly(): PromptAssemblyClient;
  readonly monitor: CacheMonitorClient | undefined;
  /** The transport the services share (to watch or inject events). */
  readonly bus: MessageBus;
  promptAssembly(): RunningPromptAssembly;
  /** The URL of a service's database (MariaDB or SQLite). */
  databaseUrl(service: ServiceName): string;
  /** Stops prompt-assembly and starts a new one on the same database: nothing in memory survives. */
  restartAssembly(): Promise<void>;
  /** The same for rules-snapshot and prompt-assembly, the two services that keep session state in memory. */
  restartStateful(): Promise<void>;
  /**
   * Starts another prompt-assembly on the same database and consumer group, with its own bus
   * connection (Kafka transport only). Its stop() also closes that connection; stop() of the
   * stack stops any replica still running.
   */
  startAssemblyReplica(): Promise<RunningPromptAssembly>;
  stop(): Promise<void>;
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const logger = silentLogger();
  const dataDir = mkdtempSync(join(tmpdir(), "pg-stack-"));
  const databases: TestDatabase[] = [];
  const urls = new Map<string, string>();
  const databaseUrl = async (name: string): Promise<string> => {
    let url: string;
    if (options.store === "mariadb") {
      const db = await createTestDatabase(`stack_${name.replace(/-/g, "_")}`);
      databases.push(db);
      url = db.url;
    } else {
      url = `sqlite:${dataDir}/${name}.sqlite`;
    }
    urls.set(name, url);
    return url;
  };
  const runId = uniqueName("stack");
  const transportEnv: Record<string, string> =
    options.transport === "kafka"
      ? { TRANSPORT: "kafka", KAFKA_BROKERS: testKafkaBrokers.join(",") }
      : { TRANSPORT: "embedded", BUS_DATABASE_URL: await databaseUrl("bus") };
  const auth = options.auth;
  const authEnv: Record<string, string> =
    auth === undefined
      ? {}
      : { PRINCIPALS_FILE: auth.principalsFile, PRINCIPALS_RELOAD_MS: String(auth.reloadMs ?? 200) };
  const peerAuthEnv: Record<string, string> = auth?.peerToken === undefined ? {} : { PEER_AUTH_TOKEN: auth.peerToken };
  const env = { ...transportEnv, GRPC_PORT: "0", LOG_LEVEL: "silent", ...authEnv, ...options.env };
  const envFor = (service: ServiceName, extra: Record<string, string>) => ({
    ...env,
    ...(options.transport === "kafka" ? { CONSUMER_GROUP: `${runId}-${service}` } : {}),
    ...(service === "prompt-assembly" ? peerAuthEnv : {}),
    ...extra,
    ...options.serviceEnv?.[service],
  });
  const now = options.now ?? Date.now;
  let bus: MessageBus;
  let closeBus: () => Promise<void>;
  if (options.transport === "kafka") {
    bus = createKafkaBus({ brokers: testKafkaBrokers, clientId: runId, logger });
    await bus.ensureTopics(defaultTopicSpecs());
    // This stack's groups read what this stack publishes, not every earlier suite's events.
    await startGroupsAtEnd(testKafkaBrokers, [
      { groupId: `${runId}-rules-snapshot`, topic: Topics.sessionEvents },
      { groupId: `${runId}-prompt-assembly`, topic: Topics.sessionEvents },
      { groupId: `${runId}-cache-monitor.prefix`, topic: Topics.promptPrefix },
      { groupId: `${runId}-cache-monitor.usage`, topic: Topics.llmUsage },
    ]);
    closeBus = () => bus.close();
  } else {
    const handle = await openBus(loadSessionEventsConfig(env), runId, defaultTopicSpecs(), logger);
    bus = handle.bus;
    closeBus = () => handle.close();
  }
  const sessionEvents = await startSessionEvents(
    loadSessionEventsConfig(envFor("session-events", { DATABASE_URL: await databaseUrl("session-events") })),
    { bus, logger, now },
  );
  const rulesConfig = loadRulesSnapshotConfig(
    envFor("rules-snapshot", { DATABASE_URL: await databaseUrl("rules-snapshot") }),
  );
  const startRules = () => startRulesSnapshot(rulesConfig, { bus, logger, now });
  let rulesSnapshot = await startRules();
  const assemblyDatabaseUrl = await databaseUrl("prompt-assembly");
  // Built at each start: a restarted rules-snapshot listens on another port.
  const assemblyConfig = () =>
    loadPromptAssemblyConfig(
      envFor("prompt-assembly", {
        DATABASE_URL: assemblyDatabaseUrl,
        SESSION_EVENTS_ADDRESS: sessionEvents.address,
        RULES_SNAPSHOT_ADDRESS: rulesSnapshot.address,
      }),
    );
  const startAssembly = (on: MessageBus = bus) =>
    startPromptAssembly(assemblyConfig(), {
      bus: on,
      logger,
      now,
      ...(options.assemblyPorts === undefined ? {} : { ports: options.assemblyPorts }),
    });
  let promptAssembly = await startAssembly();
  const replicas = new Set<RunningPromptAssembly>();
  const cacheMonitor =
    options.cacheMonitor === true
      ? await startCacheMonitor(
          loadCacheMonitorConfig(envFor("cache-monitor", { DATABASE_URL: await databaseUrl("cache-monitor") })),
          { bus, logger, now },
        )
      : undefined;
  const insecure = credentials.createInsecure();
  const sessions = new SessionEventsClient(sessionEvents.address, insecure);
  let rules = new RulesSnapshotClient(rulesSnapshot.address, insecure);
  let assembly = new PromptAssemblyClient(promptAssembly.address, insecure);
  const monitor = cacheMonitor === undefined ? undefined : new CacheMonitorClient(cacheMonitor.address, insecure);
  return {
    get addresses() {
      return {
        "session-events": sessionEvents.address,
        "rules-snapshot": rulesSnapshot.address,
        "prompt-assembly": promptAssembly.address,
        "cache-monitor": cacheMonitor?.address ?? "",
      };
    },
    sessions,
    get rules() {
      return rules;
    },
    assembly: () => assembly,
    monitor,
    bus,
    promptAssembly: () => promptAssembly,
    databaseUrl: (service) => urls.get(service) ?? "",
    async restartStateful() {
      assembly.close();
      rules.close();
      await promptAssembly.stop();
      await rulesSnapshot.stop();
      rulesSnapshot = await startRules();
      rules = new RulesSnapshotClient(rulesSnapshot.address, insecure);
      promptAssembly = await startAssembly();
      assembly = new PromptAssemblyClient(promptAssembly.address, insecure);
    },
    async restartAssembly() {
      assembly.close();
      await promptAssembly.stop();
      promptAssembly = await startAssembly();
      assembly = new PromptAssemblyClient(promptAssembly.address, insecure);
    },
    async startAssemblyReplica() {
      if (options.transport !== "kafka") throw new Error("startAssemblyReplica needs transport: kafka");
      const ownBus = createKafkaBus({ brokers: testKafkaBrokers, clientId: uniqueName(`${runId}-replica`), logger });
      let running: RunningPromptAssembly;
      try {
        running = await startAssembly(ownBus);
      } catch (error) {
        await ownBus.close();
        throw error;
      }
      const replica: RunningPromptAssembly = {
        address: running.address,
        builder: running.builder,
        views: running.views,
        metrics: running.metrics,
        async stop() {
          if (!replicas.delete(replica)) return;
          await running.stop();
          await ownBus.close();
        },
      };
      replicas.add(replica);
      return replica;
    },
    async stop() {
      sessions.close();
      rules.close();
      assembly.close();
      monitor?.close();
      await cacheMonitor?.stop();
      for (const replica of [...replicas]) await replica.stop();
      await promptAssembly.stop();
      await rulesSnapshot.stop();
      await sessionEvents.stop();
      await closeBus();
      for (const db of databases) await db.drop();
    },
  };
}
