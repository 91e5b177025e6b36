// Scale-out on Kafka (docs/decisions/fault-suites.md): two replicas of every service as real
// processes on a broker of the suite's own and MariaDB. A first load runs on one replica of each
// (the 1-replica rate), then the second replicas join and a load of ≥ 10,000 events across 500
// sessions runs while BuildRequests alternate between both prompt-assembly replicas; mid-load one
// replica of each service is SIGKILLed. Then it proves, from MariaDB and from Kafka itself:
// - every event applied exactly once per consumer (audit triggers record every position and
//   projection change, which must tile 1..last with no overlap);
// - the survivor of each consumer group owns every partition (kafkajs admin), and how long that took;
// - consumer lag returns under a bound (sampled through the whole load);
// - every body served equals a single-replica build of the same (session, seq) state;
// - the relays run split over RELAY_LEASES leases (4 unless SCALE_RELAY_LEASES says): both replicas
//   publish while both are up, every row reaches Kafka, each session's first deliveries are in write
//   order, one relay at a time publishes a session (its publishers never interleave: the dead
//   holder's run, then the survivor's, which starts after the kill), and the dead replica's leases
//   move to the survivor.
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, type ServiceError, status } from "@grpc/grpc-js";
import { createKafkaBus, RELAY_PUBLISHER_HEADER } from "@prefix-guard/bus";
import { eventually, type KafkaProbe, openKafkaProbe, type ReadBackMessage } from "@prefix-guard/bus/testing";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { callUnary } from "@prefix-guard/grpc";
import { silentLogger } from "@prefix-guard/logging";
import { PromptAssemblyClient } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { commonConfigShape, defaultTopicSpecs } from "@prefix-guard/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServiceName, startStack } from "../stack";
import { mainSessionRequest } from "../support";
import { auditedChains, auditedInserts, auditedInsertsBySession, installApplyAudit } from "./audit";
import { loadBuildRequest, SessionLoad } from "./load";
import { privateKafka, randomPortBlock, type ServiceProcess, serviceProcess } from "./processes";

const SESSIONS = Number(process.env.SCALE_SESSIONS ?? "500");
const SINGLE_REPLICA_SESSIONS = Number(process.env.SCALE_SINGLE_SESSIONS ?? "100");
const MESSAGES_PER_SESSION = 19; // + SessionCreated = 20 events per session
const BUILD_EVERY = 5; // a BuildRequest after every 5th event of a session
const DELETE_EVERY = 10; // every 10th session is deleted at its end: rules-snapshot's consumer applies only cleanups
const LANES = 16;
const KILL_AT = 0.4; // share of the two-replica load written when one replica of each service dies
const LAG_BOUND = Number(process.env.SCALE_LAG_BOUND ?? "1000");
/**
 * Lag is read from committed offsets, and a consumer that keeps up commits what it applied once per
 * CONSUMER_COMMIT_INTERVAL_MS (the services run with the default): at the load's rate that many
 * ms of events are applied but not yet committed, so the bound after the kill allows them on top.
 */
const COMMIT_INTERVAL_MS = commonConfigShape.CONSUMER_COMMIT_INTERVAL_MS.parse(undefined);
/**
 * "Stays under" is judged on the median of each run of this many consecutive samples (one commit
 * interval of 250 ms samples): a single sample can fall between the commits of the survivor's six
 * partitions and read one interval's events twice over; a consumer falling behind lifts the medians.
 */
const LAG_WINDOW = Math.max(1, Math.round(COMMIT_INTERVAL_MS / 250));

/** Medians of consecutive windows of `size` values (the last window may be shorter). */
function windowMedians(values: readonly number[], size: number): number[] {
  const medians: number[] = [];
  for (let i = 0; i < values.length; i += size) {
    const window = values.slice(i, i + size).sort((a, b) => a - b);
    medians.push(window[Math.floor((window.length - 1) / 2)] ?? 0);
  }
  return medians;
}
const PARTITIONS = 6;
const RELAY_LEASES = Number(process.env.SCALE_RELAY_LEASES ?? "4");
const broker = privateKafka(Number(process.env.SCALE_KAFKA_PORT ?? "29392"), ".run/kafka-scale-out");
const basePort = randomPortBlock(12_000, 400, 16);

const services: readonly ServiceName[] = ["session-events", "rules-snapshot", "prompt-assembly", "cache-monitor"];
/** Consumer groups and the topic each consumes. */
const groups = [
  { group: "rules-snapshot", topic: "session.events.v1", db: "rules-snapshot" },
  { group: "prompt-assembly", topic: "session.events.v1", db: "prompt-assembly" },
  { group: "cache-monitor.prefix", topic: "prompt.prefix.v1", db: "cache-monitor" },
  { group: "cache-monitor.usage", topic: "llm.usage.v1", db: "cache-monitor" },
] as const;

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

interface RecordedBuild {
  readonly sessionId: string;
  readonly seq: number;
  readonly requestId: string;
  readonly bodySha: string;
}

describe("scale-out: two replicas of every service on Kafka, one of each SIGKILLed mid-load", () => {
  const dbs = {} as Record<ServiceName, TestDatabase>;
  const replicas = {} as Record<ServiceName, [ServiceProcess, ServiceProcess]>;
  const metricsPorts: [number, number] = [basePort + 8, basePort + 9];
  const sessionEventsMetricsPorts: [number, number] = [basePort + 10, basePort + 11];
  let probe: KafkaProbe;
  let workspace: string;
  const runId = Date.now().toString(36);
  const builds: RecordedBuild[] = [];
  /** The last seq of every session written, deleted ones included. */
  const lastSeqs = new Map<string, number>();
  const deleted = new Set<string>();
  const buildStatuses = new Map<string, number>();
  const figures: string[] = [];

  const buildRequest = (sessionId: string, minSeq: number) =>
    loadBuildRequest(sessionId, minSeq, workspace, ["persona", "environment"]);
  const sessionRequest = (sessionId: string) =>
    mainSessionRequest(sessionId, workspace, { owner: "scale", timezone: "UTC" });

  beforeAll(async () => {
    broker.run("reset");
    broker.run("start");
    const bus = createKafkaBus({ brokers: broker.brokers, clientId: "scale-setup", logger: silentLogger() });
    await bus.ensureTopics(defaultTopicSpecs(PARTITIONS));
    await bus.close();
    probe = await openKafkaProbe(broker.brokers);
    workspace = mkdtempSync(join(tmpdir(), "pg-scale-"));
    writeFileSync(join(workspace, "AGENTS.md"), "# Rules\n- scale out, stay byte-stable\n");
    for (const name of services) dbs[name] = await createTestDatabase(`scale_${name.replace("-", "_")}`);
    services.forEach((name, s) => {
      const make = (r: 0 | 1) =>
        serviceProcess(name, basePort + s * 2 + r, {
          TRANSPORT: "kafka",
          KAFKA_BROKERS: broker.brokers.join(","),
          KAFKA_CLIENT_ID: `${name}-${r}`,
          DATABASE_URL: dbs[name].url,
          // Each prompt-assembly replica calls the replica of its own index (what a Service would pick).
          SESSION_EVENTS_ADDRESS: `127.0.0.1:${basePort + r}`,
          RULES_SNAPSHOT_ADDRESS: `127.0.0.1:${basePort + 2 + r}`,
          RELAY_LEASES: String(RELAY_LEASES),
          ...(name === "prompt-assembly" ? { METRICS_PORT: String(metricsPorts[r]) } : {}),
          ...(name === "session-events" ? { METRICS_PORT: String(sessionEventsMetricsPorts[r]) } : {}),
        });
      replicas[name] = [make(0), make(1)];
    });
    // Replica 0 of each first: it takes the relay leases (all of them until replica 1 joins), so the
    // kill below hits a holder.
    await Promise.all(services.map((name) => replicas[name][0].start()));
    for (const name of ["rules-snapshot", "prompt-assembly", "cache-monitor"] as const)
      await installApplyAudit(dbs[name].db, name);
  }, 240_000);

  afterAll(async () => {
    if (figures.length > 0) process.stdout.write(`scale-out figures:\n  ${figures.join("\n  ")}\n`);
    await Promise.all(services.flatMap((name) => (replicas[name] ?? []).map((p) => p.kill("SIGKILL"))));
    await probe?.close();
    broker.run("stop");
    for (const db of Object.values(dbs)) await db.drop();
  }, 240_000);

  /** Writes `count` sessions of 20 events in lanes, building after every 5th event; returns events/s. */
  async function runLoad(
    prefix: string,
    count: number,
    sessions: (lane: number, attempt: number) => SessionEventsClient,
    assembly: (n: number, attempt: number) => PromptAssemblyClient,
    onProgress: (share: number) => Promise<void> = async () => undefined,
  ): Promise<{ load: SessionLoad; seconds: number }> {
    const load = new SessionLoad({ client: sessions });
    let buildCount = 0;
    const started = Date.now();
    const total = eventsOf(count);
    const build = async (sessionId: string, seq: number) => {
      const n = buildCount++;
      for (let attempt = 0; ; attempt++) {
        const client = assembly(n, attempt);
        try {
          const response = await callUnary(client, client.buildRequest, buildRequest(sessionId, seq), {
            deadlineMs: 10_000,
          });
          buildStatuses.set("OK", (buildStatuses.get("OK") ?? 0) + 1);
          expect(response.projectionSeq).toBe(seq);
          builds.push({ sessionId, seq, requestId: response.requestId, bodySha: sha256(response.bodyJson) });
          return;
        } catch (error) {
          const code = (error as ServiceError).code;
          if (code === undefined) throw error;
          buildStatuses.set(status[code], (buildStatuses.get(status[code]) ?? 0) + 1);
          if (attempt > 100) throw error;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    };
    await Promise.all(
      Array.from({ length: LANES }, async (_, lane) => {
        for (let s = lane; s < count; s += LANES) {
          const sessionId = `${prefix}-${runId}-${s}`;
          await load.create(lane, sessionRequest(sessionId));
          for (let m = 0; m < MESSAGES_PER_SESSION; m++) {
            const seq = await load.save(lane, sessionId, m);
            if (seq % BUILD_EVERY === 0) await build(sessionId, seq);
            await onProgress(load.committed / total);
          }
          if (s % DELETE_EVERY === 0) {
            await load.delete(lane, sessionId);
            deleted.add(sessionId);
          }
          lastSeqs.set(sessionId, load.written.get(sessionId) ?? 0);
        }
      }),
    );
    return { load, seconds: (Date.now() - started) / 1000 };
  }

  /** Events of `count` sessions of the load, their deletions included. */
  const eventsOf = (count: number) => count * (MESSAGES_PER_SESSION + 1) + Math.ceil(count / DELETE_EVERY);

  /** Waits until every consumer has applied every event written so far; returns when that happened. */
  async function caughtUp(): Promise<number> {
    const events = [...lastSeqs.values()].reduce((a, b) => a + b, 0);
    await eventually(
      async () => {
        const row = await dbs["prompt-assembly"]
          .db("consumer_position")
          .where({ consumer: "prompt-assembly" })
          .sum({ n: "last_seq" })
          .first();
        if (Number(row?.n ?? 0) < events) return false;
        for (const { group, topic } of groups) if ((await probe.lag(group, topic)) > 0) return false;
        return true;
      },
      { what: `consumers at ${events} events`, timeoutMs: 120_000, intervalMs: 100 },
    );
    return Date.now();
  }

  const insecure = credentials.createInsecure();
  const sessionClients = (targets: readonly string[]) => targets.map((t) => new SessionEventsClient(t, insecure));
  const assemblyClients = (targets: readonly string[]) => targets.map((t) => new PromptAssemblyClient(t, insecure));

  it("measures the one-replica rate", async () => {
    const sessions = sessionClients([replicas["session-events"][0].address]);
    const assembly = assemblyClients([replicas["prompt-assembly"][0].address]);
    const started = Date.now();
    const { load, seconds } = await runLoad(
      "one",
      SINGLE_REPLICA_SESSIONS,
      () => sessions[0]!,
      () => assembly[0]!,
    );
    const events = eventsOf(SINGLE_REPLICA_SESSIONS);
    const applied = await caughtUp();
    for (const c of [...sessions, ...assembly]) c.close();
    expect(load.committed).toBe(events);
    figures.push(
      `1 replica: ${events} events written at ${(events / seconds).toFixed(0)}/s, applied by every consumer at ${(events / ((applied - started) / 1000)).toFixed(0)}/s`,
    );
  }, 180_000);

  it(`keeps every guarantee with 2 replicas of each service over ${eventsOf(SESSIONS)} events, one of each SIGKILLed`, async () => {
    await Promise.all(services.map((name) => replicas[name][1].start()));
    // Both members of every group own partitions before the load.
    await eventually(
      async () => {
        for (const { group, topic } of groups) {
          const members = await probe.members(group);
          if (members.length !== 2 || members.some((m) => (m.partitions[topic] ?? []).length === 0)) return false;
        }
        return true;
      },
      { what: "two members per group, each owning partitions", timeoutMs: 60_000, intervalMs: 250 },
    );
    // Both replicas of each relaying service hold leases before the load (with one lease, replica 0).
    const relayMetrics = { "session-events": sessionEventsMetricsPorts, "prompt-assembly": metricsPorts };
    await eventually(
      async () => {
        for (const ports of Object.values(relayMetrics)) {
          const held = await Promise.all(ports.map((port) => metricValue(port, "prefixguard_relay_leases_held")));
          const total = held.reduce((sum, n) => sum + n, 0);
          if (total !== RELAY_LEASES || (RELAY_LEASES > 1 && held.includes(0))) return false;
        }
        return true;
      },
      { what: `${RELAY_LEASES} relay leases split between the replicas`, timeoutMs: 30_000, intervalMs: 250 },
    );
    const se = replicas["session-events"];
    const pa = replicas["prompt-assembly"];
    // Each lane prefers one replica and moves to the other when its write fails.
    const sessions = sessionClients([se[0].address, se[1].address]);
    const assembly = assemblyClients([pa[0].address, pa[1].address]);
    const dead = new Set<number>();
    const alive = (preferred: number, attempt: number) => {
      const i = (preferred + attempt) % 2;
      return dead.has(i) ? 1 - i : i;
    };

    const lagSamples = new Map<string, Array<{ at: number; lag: number }>>(groups.map((g) => [g.group, []]));
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const { group, topic } of groups) {
          const lag = await probe.lag(group, topic).catch(() => undefined);
          if (lag !== undefined) lagSamples.get(group)?.push({ at: Date.now(), lag });
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    })();

    const holders = {
      sessionEvents: `${hostname()}/${se[0].pid}`,
      assembly: `${hostname()}/${pa[0].pid}`,
    };
    const survivors = { sessionEvents: `${hostname()}/${se[1].pid}`, assembly: `${hostname()}/${pa[1].pid}` };
    let killedAt = 0;
    let buildsServedBeforeKill: number[] = [];
    const rebalance: Record<string, number> = {};
    const leasesMoved: Record<string, number> = {};
    let killing: Promise<void> | undefined;
    const kill = async () => {
      buildsServedBeforeKill = await Promise.all(metricsPorts.map(buildsServed));
      killedAt = Date.now();
      dead.add(0);
      await Promise.all(services.map((name) => replicas[name][0].kill("SIGKILL")));
      // Side by side: the groups rebalance, and the dead replica's relay leases move to the survivor.
      await Promise.all([
        ...groups.map(async ({ group, topic }) => {
          await eventually(
            async () => {
              const members = await probe.members(group);
              return members.length === 1 && (members[0]?.partitions[topic] ?? []).length === PARTITIONS;
            },
            { what: `${group} rebalanced to one member owning all partitions`, timeoutMs: 60_000, intervalMs: 100 },
          );
          rebalance[group] = Date.now() - killedAt;
        }),
        ...Object.entries(relayMetrics).map(async ([service, ports]) => {
          await eventually(
            async () => (await metricValue(ports[1], "prefixguard_relay_leases_held")) === RELAY_LEASES,
            {
              what: `${service}'s survivor to hold all ${RELAY_LEASES} relay leases`,
              timeoutMs: 60_000,
              intervalMs: 100,
            },
          );
          leasesMoved[service] = Date.now() - killedAt;
        }),
      ]);
    };
    const started = Date.now();
    const { load, seconds } = await runLoad(
      "two",
      SESSIONS,
      (lane, attempt) => sessions[alive(lane % 2, attempt)]!,
      (n, attempt) => assembly[alive(n % 2, attempt)]!,
      async (share) => {
        if (share >= KILL_AT && killing === undefined) killing = kill();
      },
    );
    await killing;
    const events = eventsOf(SESSIONS);
    const applied = await caughtUp();
    // Lag back to zero once the writes stop.
    for (const { group, topic } of groups)
      await eventually(async () => (await probe.lag(group, topic)) === 0, {
        what: `${group} lag 0`,
        timeoutMs: 60_000,
      });
    sampling = false;
    await sampler;
    for (const c of [...sessions, ...assembly]) c.close();
    expect(load.committed).toBe(events);

    // Both prompt-assembly replicas served builds while both were up.
    expect(buildsServedBeforeKill.every((n) => n > 0)).toBe(true);
    // Every group: the survivor owns every partition.
    for (const { group, topic } of groups) {
      const members = await probe.members(group);
      expect(members).toHaveLength(1);
      expect(members[0]?.partitions[topic]).toEqual([0, 1, 2, 3, 4, 5]);
    }
    // Lag: after the rebalance it comes back under the bound and stays there.
    const rebalanced = killedAt + Math.max(...Object.values(rebalance));
    const lagBound = LAG_BOUND + Math.ceil(((events / seconds) * COMMIT_INTERVAL_MS) / 1000);
    const lagRecovery: string[] = [];
    for (const { group } of groups) {
      const after = (lagSamples.get(group) ?? []).filter((sample) => sample.at >= rebalanced);
      const back = after.findIndex((sample) => sample.lag <= lagBound);
      expect(back, `${group} lag back under ${lagBound}`).toBeGreaterThanOrEqual(0);
      expect(
        Math.max(
          ...windowMedians(
            after.slice(back).map((sample) => sample.lag),
            LAG_WINDOW,
          ),
        ),
        `${group} lag stays under ${lagBound} (median of each ${LAG_WINDOW} samples)`,
      ).toBeLessThanOrEqual(lagBound);
      lagRecovery.push(`${group} ${(((after[back]?.at ?? rebalanced) - killedAt) / 1000).toFixed(1)} s`);
    }

    await assertExactlyOnce();
    await assertRelayLeases(holders, survivors, killedAt);

    const lagOf = (samples: ReadonlyArray<{ lag: number }>) => samples.map((sample) => sample.lag);
    const allLag = lagOf([...lagSamples.values()].flat());
    figures.push(
      `2 replicas: ${events} events written at ${(events / seconds).toFixed(0)}/s (a kill and a rebalance included), applied by every consumer at ${(events / ((applied - started) / 1000)).toFixed(0)}/s`,
      `builds served before the kill: replica 0 ${buildsServedBeforeKill[0]}, replica 1 ${buildsServedBeforeKill[1]}; build attempts ${describeCounts(buildStatuses)}; write attempts ${load.describeStatuses()}`,
      `rebalance after SIGKILL (until the survivor owns all ${PARTITIONS} partitions): ${Object.entries(rebalance)
        .map(([g, ms]) => `${g} ${(ms / 1000).toFixed(1)} s`)
        .join(", ")}; relay leases (${RELAY_LEASES}) all held by the survivor after ${Object.entries(leasesMoved)
        .map(([service, ms]) => `${service} ${(ms / 1000).toFixed(1)} s`)
        .join(", ")}`,
      `consumer lag (messages, sampled every 250 ms over ${groups.length} groups): p50 ${percentile(allLag, 50)}, p99 ${percentile(allLag, 99)}, max ${Math.max(...allLag)}; ${[
        ...lagSamples,
      ]
        .map(([g, samples]) => `${g} p99 ${percentile(lagOf(samples), 99)}`)
        .join(", ")}; under ${lagBound} again after the kill: ${lagRecovery.join(", ")}`,
    );
  }, 420_000);

  it("answered every build with the body a single replica builds for the same state", async () => {
    // One build at every BUILD_EVERY-th seq of every session (the deletion is never built).
    expect(builds.length).toBe(lastSeqs.size * Math.floor((MESSAGES_PER_SESSION + 1) / BUILD_EVERY));
    const reference = await startStack();
    try {
      const load = new SessionLoad({ client: () => reference.sessions });
      const bySession = new Map<string, RecordedBuild[]>();
      for (const b of builds) bySession.set(b.sessionId, [...(bySession.get(b.sessionId) ?? []), b]);
      const ids = [...bySession.keys()];
      let compared = 0;
      const differing: string[] = [];
      await Promise.all(
        Array.from({ length: 8 }, async (_, lane) => {
          for (let s = lane; s < ids.length; s += 8) {
            const sessionId = ids[s]!;
            const wanted = new Map((bySession.get(sessionId) ?? []).map((b) => [b.seq, b]));
            const last = Math.max(...wanted.keys());
            let seq = await load.create(lane, sessionRequest(sessionId));
            for (let m = 0; seq < last; m++) {
              seq = await load.save(lane, sessionId, m);
              const served = wanted.get(seq);
              if (served === undefined) continue;
              const assembly = reference.assembly();
              const single = await callUnary(assembly, assembly.buildRequest, buildRequest(sessionId, seq), {
                deadlineMs: 10_000,
              });
              compared += 1;
              if (sha256(single.bodyJson) !== served.bodySha || single.requestId !== served.requestId)
                differing.push(`${sessionId}@${seq}`);
            }
          }
        }),
      );
      expect(differing).toEqual([]);
      expect(compared).toBe(builds.length);
      figures.push(`bodies: ${compared} builds served under load, each equal to a one-replica build of its state`);
    } finally {
      await reference.stop();
    }
  }, 240_000);

  /** The sum of a metric's series on one process's /metrics. */
  async function metricValue(port: number, name: string): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return text
      .split("\n")
      .filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`))
      .reduce((n, line) => n + Number(line.split(" ").at(-1)), 0);
  }

  async function buildsServed(port: number): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return text
      .split("\n")
      .filter(
        (line) =>
          line.startsWith("prefixguard_grpc_server_handling_seconds_count{") &&
          line.includes('grpc_method="BuildRequest"'),
      )
      .reduce((n, line) => n + Number(line.split(" ").at(-1)), 0);
  }

  function describeCounts(counts: ReadonlyMap<string, number>): string {
    return [...counts].map(([name, n]) => `${name} ${n}`).join(", ");
  }

  /**
   * Every consumer position and projection row moved through 1..last exactly once per session: the
   * audited moves of one (consumer, session) chain old→new with no overlap and end at the session's
   * last seq. rules-snapshot applies only cleanups (here the deletions), each across the gap.
   */
  async function assertExactlyOnce(): Promise<void> {
    const problems: string[] = [];
    let moves = 0;
    const audited = [
      { db: "prompt-assembly" as const, source: "consumer_position" as const, sessions: [...lastSeqs.keys()] },
      { db: "prompt-assembly" as const, source: "pa_session" as const, sessions: [...lastSeqs.keys()] },
      { db: "rules-snapshot" as const, source: "consumer_position" as const, sessions: [...deleted] },
    ];
    for (const { db, source, sessions } of audited) {
      const chains = await auditedChains(dbs[db].db, source, lastSeqs, sessions, {
        acrossGaps: db === "rules-snapshot",
      });
      problems.push(...chains.problems.map((p) => `${db}/${p}`));
      moves += chains.moves;
    }
    expect(problems).toEqual([]);
    const pa = dbs["prompt-assembly"].db;
    // Each message inserted once; a deleted session's last messages may be dropped with it when
    // they and the deletion arrive in one batch (the messages of a deleted session go).
    const inserted = await auditedInsertsBySession(pa, "pa_message");
    let messages = 0;
    for (const sessionId of lastSeqs.keys()) {
      const counts = inserted.get(sessionId) ?? { rows: 0, distinct: 0 };
      messages += counts.rows;
      expect(counts.rows, sessionId).toBe(counts.distinct);
      if (deleted.has(sessionId)) expect(counts.rows, sessionId).toBeLessThanOrEqual(MESSAGES_PER_SESSION);
      else expect(counts.rows, sessionId).toBe(MESSAGES_PER_SESSION);
    }
    // cache-monitor: each prefix event stored once (never deleted and stored again), none missing.
    const cm = dbs["cache-monitor"].db;
    const stored = await auditedInserts(cm);
    const published = await pa("outbox_message").where({ topic: "prompt.prefix.v1" }).count({ n: "*" }).first();
    expect(stored.rows).toBe(stored.distinct);
    expect(stored.rows).toBe(Number(published?.n));
    figures.push(
      `exactly once: ${moves} audited position/projection moves chain 1..last for every (consumer, session); ${messages} messages projected once; ${stored.rows} prefix events stored once by cache-monitor`,
    );
  }

  /**
   * What the relays published, read back from Kafka, against the rows they had to publish: every row
   * there (duplicates counted, never required), each key's first deliveries in write order, and each
   * key published by one relay at a time: the holder's run, the survivor's, or the holder's then the
   * survivor's from after the kill (its lease moved). With several leases both replicas published
   * while both were up.
   */
  async function assertRelayLeases(
    holders: { sessionEvents: string; assembly: string },
    survivors: { sessionEvents: string; assembly: string },
    killedAt: number,
  ): Promise<void> {
    const checks = [
      {
        topic: "session.events.v1",
        db: "session-events" as const,
        table: "session_event",
        holder: holders.sessionEvents,
        survivor: survivors.sessionEvents,
        // A session's events in write order: its seq.
        writeOrder: async () => (m: ReadBackMessage) => Number(m.headers["pg-seq"]),
      },
      {
        topic: "prompt.prefix.v1",
        db: "prompt-assembly" as const,
        table: "outbox_message",
        holder: holders.assembly,
        survivor: survivors.assembly,
        // An outbox row's id, found by the event id it carries.
        writeOrder: async () => {
          const rows = (await dbs["prompt-assembly"].db("outbox_message").select("id", "headers_json")) as Array<{
            id: number;
            headers_json: string;
          }>;
          const ids = new Map(rows.map((row) => [JSON.parse(row.headers_json).ce_id as string, Number(row.id)]));
          return (m: ReadBackMessage) => ids.get(m.headers.ce_id ?? "") ?? Number.NaN;
        },
      },
    ];
    for (const { topic, db, table, holder, survivor, writeOrder } of checks) {
      await eventually(
        async () => Number((await dbs[db].db(table).whereNull("published_at_ms").count({ n: "*" }).first())?.n) === 0,
        { what: `${table} relayed`, timeoutMs: 60_000 },
      );
      const ofTopic = table === "outbox_message" ? dbs[db].db(table).where({ topic }) : dbs[db].db(table);
      const rows = Number((await ofTopic.count({ n: "*" }).first())?.n);
      const messages = await probe.readAll(topic, rows);
      const orderOf = await writeOrder();
      const byKey = new Map<string, ReadBackMessage[]>();
      for (const m of messages.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset)))
        byKey.set(m.key, [...(byKey.get(m.key) ?? []), m]);
      const problems: string[] = [];
      let distinct = 0;
      let moved = 0;
      const failovers: number[] = [];
      for (const [key, list] of byKey) {
        const firsts: number[] = [];
        for (const m of list) {
          const order = orderOf(m);
          if (!firsts.includes(order)) firsts.push(order);
        }
        distinct += firsts.length;
        if (firsts.some((order, i) => Number.isNaN(order) || (i > 0 && order <= (firsts[i - 1] ?? 0))))
          problems.push(`${key}: first deliveries out of write order: ${firsts.join(",")}`);
        const publishers = list.map((m) => m.headers[RELAY_PUBLISHER_HEADER] ?? "(none)");
        const runs = publishers.filter((publisher, i) => i === 0 || publishers[i - 1] !== publisher);
        const runsText = JSON.stringify(runs);
        if (![[holder], [survivor], [holder, survivor]].some((allowed) => JSON.stringify(allowed) === runsText))
          problems.push(`${key}: publishers ${runs.join(" → ")}`);
        if (runs.length === 2) {
          moved += 1;
          const holderLast = Math.max(...list.filter((_, i) => publishers[i] === holder).map((m) => m.timestampMs));
          const survivorFirst = Math.min(
            ...list.filter((_, i) => publishers[i] === survivor).map((m) => m.timestampMs),
          );
          if (survivorFirst < holderLast || survivorFirst < killedAt)
            problems.push(
              `${key}: the survivor published at ${survivorFirst}, the holder last at ${holderLast}, killed at ${killedAt}`,
            );
          failovers.push(survivorFirst - killedAt);
        }
      }
      expect(problems).toEqual([]);
      expect(distinct).toBe(rows);
      const published = (publisher: string, before = Number.POSITIVE_INFINITY) =>
        messages.filter((m) => m.headers[RELAY_PUBLISHER_HEADER] === publisher && m.timestampMs < before).length;
      expect(published(holder)).toBeGreaterThan(0);
      expect(published(survivor)).toBeGreaterThan(0);
      // Several leases: the survivor published its own share before the kill too.
      if (RELAY_LEASES > 1) expect(published(survivor, killedAt)).toBeGreaterThan(0);
      figures.push(
        `${topic}: ${messages.length} messages for ${rows} rows (${messages.length - rows} republished) over ${RELAY_LEASES} relay leases; holder published ${published(holder)}, survivor ${published(survivor)} (${published(survivor, killedAt)} before the kill); ${byKey.size} keys each in write order, ${moved} moved to the survivor${failovers.length > 0 ? `, its first message ${(Math.min(...failovers) / 1000).toFixed(1)}-${(Math.max(...failovers) / 1000).toFixed(1)} s after the kill` : ""}`,
      );
    }
  }
});
