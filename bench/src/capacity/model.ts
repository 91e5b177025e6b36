// Capacity on paper (docs/capacity.md): what a fleet of agents, each running one turn every 20 s, asks of
// every service, MariaDB and Kafka, computed from one bench run's figures (figures.ts) and the
// constants below. Pure: docs/capacity.md is rendered from capacityModel(...) by render.ts.
//
// What the bench does not measure is a named constant here, each with the code or the source it was
// counted from. The model is linear in the number of agents: every use is a per-agent figure times
// the agents, and every limit binds at capacity ÷ per-agent use.

import { RELAY_LEASE_SLOTS } from "@prefix-guard/bus";
import { type BenchFigures, MEASURED_PROCESSES, type MeasuredProcess, type MeasuredRate } from "./figures";
import { fmtFixed, fmtInt } from "./format";

/** The fleet sizes the capacity doc answers for: concurrent agents. */
export const AGENT_COUNTS = [1_000, 10_000, 100_000] as const;

/**
 * One turn of the harness loop (docs/integration.md "The turn loop",
 * deploy/examples/typescript-client/turn-loop.mjs): SaveMessage(user), BuildRequest(min_seq),
 * the provider call, RecordUsage, SaveMessage(assistant). Compactions, tool-call messages beyond
 * the assistant's one, deletes and session creation are left out.
 */
export interface Workload {
  readonly turnIntervalSeconds: number;
  /** SaveMessage calls, each one MessageSaved event on session.events.v1. */
  readonly messagesPerTurn: number;
  /** BuildRequest calls, each one FingerprintObserved on prompt.prefix.v1 (a stable prefix: no PrefixChanged). */
  readonly buildsPerTurn: number;
  /** RecordUsage calls, each one UsageRecorded on llm.usage.v1. */
  readonly usageRecordsPerTurn: number;
}

export const TURN_LOOP: Workload = {
  turnIntervalSeconds: 20,
  messagesPerTurn: 2,
  buildsPerTurn: 1,
  usageRecordsPerTurn: 1,
};

/** How the fleet is run: today's deployment (deploy/k8s), and the hardware one MariaDB primary is given. */
export interface Deployment {
  /** Share of its one core a Node replica is sized to (every service is one Node process: one JS thread). */
  readonly cpuTarget: number;
  /** The HorizontalPodAutoscalers' minReplicas in deploy/k8s: two, so one can be replaced. */
  readonly minReplicas: number;
  /** Partitions of every main topic: libs/runtime/src/topics.ts defaultTopicSpecs, deploy/k8s/kafka-topics.yaml. */
  readonly topicPartitions: number;
  /**
   * RELAY_LEASES: the leases a service's relay is split over, each published by one replica at a time
   * (docs/decisions/relay-leases.md), so at most this many publishers per service. deploy/k8s keeps
   * the default, 1.
   */
  readonly relayLeases: number;
  /** deploy/k8s/kafka-topics.yaml `replicas`: every produced byte is written on this many brokers. */
  readonly kafkaReplicationFactor: number;
  /**
   * Synced writes per second one primary's volume is planned for: 16,000, the most a general-purpose
   * cloud SSD volume (AWS gp3) can be provisioned with. A local NVMe disk does more; set yours.
   */
  readonly primaryWriteIops: number;
  /** Cores of the largest primary planned for; MariaDB's CPU share is measured, this is its budget. */
  readonly primaryCores: number;
  /**
   * Synced writes per commit at most: the redo log (innodb_flush_log_at_trx_commit = 1) and the
   * binary log (sync_binlog = 1) a primary with replicas keeps. Group commit merges concurrent
   * commits into fewer syncs, so this is an upper bound.
   */
  readonly fsyncsPerCommit: number;
}

export const TODAY: Deployment = {
  cpuTarget: 0.6,
  minReplicas: 2,
  topicPartitions: 6,
  relayLeases: 1,
  kafkaReplicationFactor: 3,
  primaryWriteIops: 16_000,
  primaryCores: 32,
  fsyncsPerCommit: 2,
};

export type Topic = "session.events.v1" | "prompt.prefix.v1" | "llm.usage.v1";

/**
 * Bytes of one Kafka record (key + value + headers), encoded with the real codecs
 * (@prefix-guard/events, the generated protobuf) on 2026-12-04:
 * - MessageSaved of a 2 KiB text (the message bench/src/seal-cost.ts seals), schema 2 (sealed):
 *   value 2,282 B, headers 460 B (pg-event-type, pg-seq, pg-relay, traceparent, the ce_* set), key 36 B;
 * - FingerprintObserved of a build with 6 sections: value 866 B, headers 464 B, key 36 B;
 * - UsageRecorded with token counts and provider: value 187 B, headers 448 B, key 36 B.
 * Kafka's own framing (a few bytes a record, a batch header per batch) is left out.
 */
export const RECORD_BYTES: Readonly<Record<Topic, number>> = {
  "session.events.v1": 2_778,
  "prompt.prefix.v1": 1_366,
  "llm.usage.v1": 671,
};

/** What a write path's counts are per: one message saved, one build, one usage recorded. */
export type TurnUnit = "message" | "build" | "usage";

/** What each topic's records come from, and who reads them. */
export const TOPICS: readonly {
  readonly topic: Topic;
  readonly producer: "session-events" | "prompt-assembly" | "cache-monitor";
  readonly per: TurnUnit;
  readonly consumerGroups: readonly string[];
}[] = [
  {
    topic: "session.events.v1",
    producer: "session-events",
    per: "message",
    consumerGroups: ["prompt-assembly", "rules-snapshot"],
  },
  { topic: "prompt.prefix.v1", producer: "prompt-assembly", per: "build", consumerGroups: ["cache-monitor"] },
  // cache-monitor reads its own UsageRecorded back (gateway usage arrives on the same topic).
  { topic: "llm.usage.v1", producer: "cache-monitor", per: "usage", consumerGroups: ["cache-monitor"] },
];

export type ServiceDatabase = "session-events" | "prompt-assembly" | "cache-monitor";

export interface WritePath {
  readonly name: string;
  readonly database: ServiceDatabase;
  readonly per: TurnUnit;
  /** The counts are per this many units (a purge deletes 1,000 rows a statement: one build's or usage's row each). */
  readonly every: number;
  /** INSERT / UPDATE / DELETE statements (a multi-row INSERT is one). */
  readonly rowWrites: number;
  readonly commits: number;
  /** Where it was counted. */
  readonly code: string;
}

/**
 * Row-writing statements and commits of every write a turn causes, counted from the code with every
 * group and batch of one (a SaveMessage alone, a consumer batch of one event): the most per unit.
 * Under load, group commit (SaveMessage, the fingerprint record), consumer batches and relay batches
 * share one commit among many units, so these are upper bounds. Reads are not counted, nor is
 * cache-monitor's INSERT IGNORE of the cm_session row before each session lock
 * (monitor-store.ts withSessionLock via libs/db ensureRowsExist), which inserts a row only the first time.
 */
export const WRITE_PATHS: readonly WritePath[] = [
  {
    name: "SaveMessage: INSERT session_event, INSERT message, UPDATE session",
    database: "session-events",
    per: "message",
    every: 1,
    rowWrites: 3,
    commits: 1,
    code: "services/session-events/src/adapters/mysql/message-append.ts appendMessages",
  },
  {
    name: "session-events relay: UPDATE session_event SET published_at_ms",
    database: "session-events",
    per: "message",
    every: 1,
    rowWrites: 1,
    commits: 1,
    code: "libs/bus/src/outbox.ts OutboxRelay.drainOnce, services/session-events/src/adapters/mysql/session-event-outbox.ts markPublished",
  },
  {
    name: "prompt-assembly projection: INSERT pa_message, upsert pa_session, upsert consumer_position",
    database: "prompt-assembly",
    per: "message",
    every: 1,
    rowWrites: 3,
    commits: 1,
    code: "services/prompt-assembly/src/adapters/mysql/projection-store.ts writeSessions",
  },
  {
    name: "BuildRequest record: UPDATE pa_prefix_fingerprint, INSERT outbox_message (FingerprintObserved)",
    database: "prompt-assembly",
    per: "build",
    every: 1,
    rowWrites: 2,
    commits: 1,
    code: "services/prompt-assembly/src/adapters/mysql/fingerprint-store.ts writeIfUnchanged",
  },
  {
    name: "prompt-assembly relay: UPDATE outbox_message SET published_at_ms",
    database: "prompt-assembly",
    per: "build",
    every: 1,
    rowWrites: 1,
    commits: 1,
    code: "libs/bus/src/outbox.ts tableOutboxSource markPublished",
  },
  {
    name: "cache-monitor prefix consumer: UPDATE cm_session (its session lock), INSERT cm_prefix_observation",
    database: "cache-monitor",
    per: "build",
    every: 1,
    rowWrites: 2,
    commits: 1,
    code: "services/cache-monitor/src/application/cache-monitor.ts applyPrefixEvent, adapters/mysql/monitor-store.ts withSessionLock",
  },
  {
    name: "RecordUsage: UPDATE cm_session, INSERT cm_usage, INSERT outbox_message (UsageRecorded)",
    database: "cache-monitor",
    per: "usage",
    every: 1,
    rowWrites: 3,
    commits: 1,
    code: "services/cache-monitor/src/application/cache-monitor.ts recordValidatedUsage",
  },
  {
    name: "cache-monitor relay: UPDATE outbox_message SET published_at_ms",
    database: "cache-monitor",
    per: "usage",
    every: 1,
    rowWrites: 1,
    commits: 1,
    code: "libs/bus/src/outbox.ts tableOutboxSource markPublished",
  },
  {
    name: "cache-monitor usage consumer, its own UsageRecorded read back (a duplicate): UPDATE cm_session",
    database: "cache-monitor",
    per: "usage",
    every: 1,
    rowWrites: 1,
    commits: 1,
    code: "services/cache-monitor/src/application/cache-monitor.ts applyUsageEvent → recordValidatedUsage",
  },
  {
    name: "prompt-assembly outbox purge: DELETE of published outbox_message rows, 1,000 a statement",
    database: "prompt-assembly",
    per: "build",
    every: 1_000,
    rowWrites: 1,
    commits: 1,
    code: "libs/bus/src/outbox.ts purgePublished",
  },
  {
    name: "cache-monitor outbox purge: the same",
    database: "cache-monitor",
    per: "usage",
    every: 1_000,
    rowWrites: 1,
    commits: 1,
    code: "libs/bus/src/outbox.ts purgePublished",
  },
];

/** rules-snapshot reads every session event and writes for cleanup events only (none in a turn). */
export const NO_WRITE_PATHS = [
  "rules-snapshot consumer of MessageSaved: planSessionEventCleanup returns null, nothing is written (services/rules-snapshot/src/application/rules-snapshot-service.ts applySessionEvent)",
] as const;

export function unitsPerTurn(workload: Workload): Readonly<Record<TurnUnit, number>> {
  return {
    message: workload.messagesPerTurn,
    build: workload.buildsPerTurn,
    usage: workload.usageRecordsPerTurn,
  };
}

/** The Node services the bench measures, and whether their event share is consumer work (bound to partitions). */
export const NODE_SERVICES: readonly { readonly name: MeasuredProcess; readonly consumesSessionEvents: boolean }[] = [
  { name: "prompt-assembly", consumesSessionEvents: true },
  // Its event share is SaveMessage and the relay: RPC work, no partitions.
  { name: "session-events", consumesSessionEvents: false },
  { name: "rules-snapshot", consumesSessionEvents: true },
];

/** CPU ms one operation costs a process: its share of a core over the window ÷ the window's rate. */
export function cpuMsPerOperation(rate: MeasuredRate, process: MeasuredProcess): number {
  return (rate.cpu[process] * 10) / rate.perSecond;
}

export interface TurnCost {
  /** CPU ms per turn per process, split into RPC work and session-events consumer work. */
  readonly cpuMs: Readonly<Record<MeasuredProcess, { readonly rpc: number; readonly consumer: number }>>;
  readonly msPerBuild: Readonly<Record<MeasuredProcess, number>>;
  readonly msPerEvent: Readonly<Record<MeasuredProcess, number>>;
  readonly rowWrites: number;
  readonly commits: number;
  readonly commitsByDatabase: Readonly<Record<ServiceDatabase, number>>;
  /** Kafka records and bytes per turn by topic. */
  readonly records: Readonly<Record<Topic, number>>;
}

export function turnCost(figures: BenchFigures, workload: Workload): TurnCost {
  const msPerBuild = {} as Record<MeasuredProcess, number>;
  const msPerEvent = {} as Record<MeasuredProcess, number>;
  const cpuMs = {} as Record<MeasuredProcess, { rpc: number; consumer: number }>;
  for (const process of MEASURED_PROCESSES) {
    msPerBuild[process] = cpuMsPerOperation(figures.builds, process);
    msPerEvent[process] = cpuMsPerOperation(figures.events, process);
    const consumes = NODE_SERVICES.find((service) => service.name === process)?.consumesSessionEvents ?? false;
    const buildShare = workload.buildsPerTurn * msPerBuild[process];
    const eventShare = workload.messagesPerTurn * msPerEvent[process];
    cpuMs[process] = consumes
      ? { rpc: buildShare, consumer: eventShare }
      : { rpc: buildShare + eventShare, consumer: 0 };
  }
  const units = unitsPerTurn(workload);
  const commitsByDatabase: Record<ServiceDatabase, number> = {
    "session-events": 0,
    "prompt-assembly": 0,
    "cache-monitor": 0,
  };
  let rowWrites = 0;
  let commits = 0;
  for (const path of WRITE_PATHS) {
    const times = units[path.per] / path.every;
    rowWrites += times * path.rowWrites;
    commits += times * path.commits;
    commitsByDatabase[path.database] += times * path.commits;
  }
  const records = {} as Record<Topic, number>;
  for (const { topic, per } of TOPICS) records[topic] = units[per];
  return { cpuMs, msPerBuild, msPerEvent, rowWrites, commits, commitsByDatabase, records };
}

/** The most leases a relay can be split over: the slots rows are stored with (libs/bus/src/lease-slots.ts). */
export const MAX_RELAY_LEASES = RELAY_LEASE_SLOTS;

/** The limits that bind first at scale: a relay's leases, a single MariaDB primary, the partition count. */
export type LimitFamily = "relay" | "MariaDB primary" | "partition count";

export interface Limit {
  readonly family: LimitFamily;
  readonly name: string;
  readonly capacity: number;
  readonly unit: string;
  /** Use per concurrent agent, in `unit`. */
  readonly perAgent: number;
  /** capacity ÷ perAgent: the fleet size at which this limit is reached. */
  readonly bindsAtAgents: number;
  /** How the capacity follows from the figures and constants. */
  readonly basis: string;
}

/**
 * One relay lease's records per second: the share of one core a replica is sized to, over the CPU one
 * event costs session-events. The bench does not time the relay loop alone, so a lease is charged
 * session-events' whole cost per event (SaveMessage and relay together): its own share is smaller,
 * but its holder also serves its part of the SaveMessages. Leases held by different replicas add up.
 */
export function relayCeilingPerSecond(figures: BenchFigures, deployment: Deployment): number {
  return (deployment.cpuTarget * 1000) / cpuMsPerOperation(figures.events, "session-events");
}

function agentRate(perTurn: number, workload: Workload): number {
  return perTurn / workload.turnIntervalSeconds;
}

export function limitsOf(figures: BenchFigures, workload: Workload, deployment: Deployment): Limit[] {
  const cost = turnCost(figures, workload);
  const limit = (l: Omit<Limit, "bindsAtAgents">): Limit => ({ ...l, bindsAtAgents: l.capacity / l.perAgent });
  const relayCeiling = relayCeilingPerSecond(figures, deployment) * deployment.relayLeases;
  const leases = `${deployment.relayLeases} lease${deployment.relayLeases === 1 ? "" : "s"} (RELAY_LEASES)`;
  const relays = TOPICS.map(({ topic, producer }) =>
    limit({
      family: "relay",
      name: `the ${producer} relay (${topic})`,
      capacity: relayCeiling,
      unit: "records/s",
      perAgent: agentRate(cost.records[topic], workload),
      basis: `${leases} × ${fmtFixed(deployment.cpuTarget * 100, 0)}% of a core ÷ session-events' ${fmtFixed(cost.msPerEvent["session-events"], 3)} ms per event`,
    }),
  );
  const mariadb = [
    limit({
      family: "MariaDB primary",
      name: "one primary's synced writes",
      capacity: deployment.primaryWriteIops,
      unit: "fsyncs/s",
      perAgent: agentRate(cost.commits * deployment.fsyncsPerCommit, workload),
      basis: `${fmtInt(deployment.primaryWriteIops)} write IOPS; ${fmtFixed(cost.commits, 1)} commits per turn × ${deployment.fsyncsPerCommit} fsyncs`,
    }),
    limit({
      family: "MariaDB primary",
      name: "one primary's cores",
      capacity: deployment.primaryCores,
      unit: "cores",
      perAgent: agentRate(cost.cpuMs.mariadbd.rpc + cost.cpuMs.mariadbd.consumer, workload) / 1000,
      basis: `${deployment.primaryCores} cores; mariadbd ${fmtFixed(cost.cpuMs.mariadbd.rpc + cost.cpuMs.mariadbd.consumer, 2)} ms per turn`,
    }),
  ];
  const partitions = NODE_SERVICES.filter((service) => service.consumesSessionEvents).map(({ name }) =>
    limit({
      family: "partition count",
      name: `the ${name} consumer group (session.events.v1)`,
      capacity: deployment.topicPartitions * deployment.cpuTarget,
      unit: "cores of consumer work",
      perAgent: agentRate(cost.cpuMs[name].consumer, workload) / 1000,
      basis: `${deployment.topicPartitions} partitions, each one replica's thread at ${fmtFixed(deployment.cpuTarget * 100, 0)}%; ${fmtFixed(cost.msPerEvent[name], 3)} ms per event`,
    }),
  );
  return [...relays, ...mariadb, ...partitions];
}

export interface ServiceAtSize {
  readonly name: MeasuredProcess;
  readonly cores: number;
  readonly rpcCores: number;
  readonly consumerCores: number;
  /** Replicas at the CPU target, or null when no replica count suffices: the partitions bind. */
  readonly replicas: number | null;
}

/** `ceil` that does not turn 3.0000000001 (float noise) into 4. */
function ceilCount(value: number): number {
  return Math.ceil(value - 1e-9);
}

/**
 * Replicas for RPC work spread over every replica and consumer work spread over at most
 * `partitions` of them. Beyond the partition count the consuming replicas carry their share of the
 * RPCs plus consumerCores ÷ partitions, which must stay under the target; null when it cannot.
 */
export function replicasFor(rpcCores: number, consumerCores: number, deployment: Deployment): number | null {
  const atTarget = Math.max(deployment.minReplicas, ceilCount((rpcCores + consumerCores) / deployment.cpuTarget));
  if (consumerCores === 0 || atTarget <= deployment.topicPartitions) return atTarget;
  const perPartition = consumerCores / deployment.topicPartitions;
  if (perPartition >= deployment.cpuTarget) return null;
  return Math.max(atTarget, ceilCount(rpcCores / (deployment.cpuTarget - perPartition)));
}

export interface SizeResult {
  readonly agents: number;
  readonly turnsPerSecond: number;
  readonly services: readonly ServiceAtSize[];
  readonly mariadb: {
    readonly cores: number;
    readonly rowWritesPerSecond: number;
    readonly commitsPerSecond: number;
    readonly fsyncsPerSecond: number;
    readonly fsyncsByDatabase: Readonly<Record<ServiceDatabase, number>>;
  };
  readonly kafka: {
    readonly cores: number;
    readonly recordsPerSecond: Readonly<Record<Topic, number>>;
    readonly producedMBps: number;
    /** Produced bytes times the replication factor: what the brokers' disks take. */
    readonly writtenMBps: number;
    /** Bytes read by the consumer groups. */
    readonly fetchedMBps: number;
  };
  readonly partitions: {
    /** session.events.v1 partitions so each consumer group's work alone fits its replicas' CPU target. */
    readonly minimum: number;
    /** One per replica of the consuming service with the most replicas: every replica consumes. */
    readonly forEveryReplica: number;
  };
  readonly relays: readonly {
    readonly limit: Limit;
    readonly recordsPerSecond: number;
    readonly leasesNeeded: number;
  }[];
  /** Primaries needed with each service's database on its own, sharded by session id. */
  readonly primariesByDatabase: Readonly<Record<ServiceDatabase, number>>;
  readonly viewCache: { readonly bytes: number; readonly bytesPerReplica: number | null };
  readonly gateway: { readonly cores: number; readonly replicas: number };
  /** Each limit's use at this size, as a share of its capacity. */
  readonly limitUse: readonly { readonly limit: Limit; readonly use: number; readonly share: number }[];
  /** The limit this size exceeds that binds at the fewest agents; undefined when none is exceeded. */
  readonly firstExceeded: Limit | undefined;
}

export interface CapacityModel {
  readonly figures: BenchFigures;
  readonly workload: Workload;
  readonly deployment: Deployment;
  readonly cost: TurnCost;
  readonly limits: readonly Limit[];
  readonly relayCeilingPerSecond: number;
  readonly viewBytesPerSession: number;
  readonly sizes: readonly SizeResult[];
}

export function sizeResult(
  agents: number,
  figures: BenchFigures,
  workload: Workload,
  deployment: Deployment,
  limits: readonly Limit[] = limitsOf(figures, workload, deployment),
): SizeResult {
  const cost = turnCost(figures, workload);
  const turnsPerSecond = agents / workload.turnIntervalSeconds;
  const cores = (ms: number) => (turnsPerSecond * ms) / 1000;
  const services = NODE_SERVICES.map(({ name }): ServiceAtSize => {
    const rpcCores = cores(cost.cpuMs[name].rpc);
    const consumerCores = cores(cost.cpuMs[name].consumer);
    return {
      name,
      cores: rpcCores + consumerCores,
      rpcCores,
      consumerCores,
      replicas: replicasFor(rpcCores, consumerCores, deployment),
    };
  });
  const fsyncsByDatabase = {} as Record<ServiceDatabase, number>;
  const primariesByDatabase = {} as Record<ServiceDatabase, number>;
  for (const [database, commits] of Object.entries(cost.commitsByDatabase) as [ServiceDatabase, number][]) {
    fsyncsByDatabase[database] = turnsPerSecond * commits * deployment.fsyncsPerCommit;
    primariesByDatabase[database] = Math.max(1, ceilCount(fsyncsByDatabase[database] / deployment.primaryWriteIops));
  }
  const recordsPerSecond = {} as Record<Topic, number>;
  let produced = 0;
  let fetched = 0;
  for (const { topic, consumerGroups } of TOPICS) {
    recordsPerSecond[topic] = turnsPerSecond * cost.records[topic];
    produced += recordsPerSecond[topic] * RECORD_BYTES[topic];
    fetched += recordsPerSecond[topic] * RECORD_BYTES[topic] * consumerGroups.length;
  }
  const consuming = services.filter((service) => service.consumerCores > 0);
  const partitions = {
    minimum: Math.max(1, ...consuming.map((service) => ceilCount(service.consumerCores / deployment.cpuTarget))),
    forEveryReplica: Math.max(
      1,
      ...consuming.map((service) => Math.max(deployment.minReplicas, ceilCount(service.cores / deployment.cpuTarget))),
    ),
  };
  const relayCeiling = relayCeilingPerSecond(figures, deployment);
  const relays = limits
    .filter((limit) => limit.family === "relay")
    .map((limit) => {
      const perSecond = limit.perAgent * agents;
      return { limit, recordsPerSecond: perSecond, leasesNeeded: Math.max(1, ceilCount(perSecond / relayCeiling)) };
    });
  const limitUse = limits.map((limit) => ({
    limit,
    use: limit.perAgent * agents,
    share: (limit.perAgent * agents) / limit.capacity,
  }));
  const exceeded = limitUse.filter((entry) => entry.share > 1).map((entry) => entry.limit);
  const firstExceeded = exceeded.reduce<Limit | undefined>(
    (first, limit) => (first === undefined || limit.bindsAtAgents < first.bindsAtAgents ? limit : first),
    undefined,
  );
  const viewBytes = agents * (figures.viewCache.bytes / figures.viewCache.sessions);
  const assembly = services.find((service) => service.name === "prompt-assembly");
  const gatewayCores = (turnsPerSecond * workload.buildsPerTurn * figures.gateway.cpuMsPerRequest) / 1000;
  return {
    agents,
    turnsPerSecond,
    services,
    mariadb: {
      cores: cores(cost.cpuMs.mariadbd.rpc + cost.cpuMs.mariadbd.consumer),
      rowWritesPerSecond: turnsPerSecond * cost.rowWrites,
      commitsPerSecond: turnsPerSecond * cost.commits,
      fsyncsPerSecond: turnsPerSecond * cost.commits * deployment.fsyncsPerCommit,
      fsyncsByDatabase,
    },
    kafka: {
      cores: cores(cost.cpuMs.kafka.rpc + cost.cpuMs.kafka.consumer),
      recordsPerSecond,
      producedMBps: produced / 1e6,
      writtenMBps: (produced * deployment.kafkaReplicationFactor) / 1e6,
      fetchedMBps: fetched / 1e6,
    },
    partitions,
    relays,
    primariesByDatabase,
    viewCache: {
      bytes: viewBytes,
      bytesPerReplica: assembly?.replicas ? viewBytes / assembly.replicas : null,
    },
    gateway: {
      cores: gatewayCores,
      replicas: Math.max(deployment.minReplicas, ceilCount(gatewayCores / deployment.cpuTarget)),
    },
    limitUse,
    firstExceeded,
  };
}

export function capacityModel(
  figures: BenchFigures,
  workload: Workload = TURN_LOOP,
  deployment: Deployment = TODAY,
  agentCounts: readonly number[] = AGENT_COUNTS,
): CapacityModel {
  const limits = limitsOf(figures, workload, deployment);
  return {
    figures,
    workload,
    deployment,
    cost: turnCost(figures, workload),
    limits,
    relayCeilingPerSecond: relayCeilingPerSecond(figures, deployment),
    viewBytesPerSession: figures.viewCache.bytes / figures.viewCache.sessions,
    sizes: agentCounts.map((agents) => sizeResult(agents, figures, workload, deployment, limits)),
  };
}
