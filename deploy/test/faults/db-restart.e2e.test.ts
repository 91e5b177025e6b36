// The database under faults (docs/decisions/fault-suites.md): every service as a real process on a mariadbd of the
// suite's own (temp datadir, own port; the shared server is never touched) and a broker of its own.
// Mid-load the server is stopped (SIGTERM), stays down for a few seconds and is started again.
// Asserts: writes fail fast with UNAVAILABLE while it is down (never past their deadline, nothing
// half-written); every service reconnects by itself; relay and consumers resume; nothing lost,
// nothing applied twice; Resolve degrades to the raw rules with a warning (seed 001 §7). Prints what
// clients saw by status and the recovery time.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, type ServiceError, status } from "@grpc/grpc-js";
import { createKafkaBus } from "@prefix-guard/bus";
import { eventually, type KafkaProbe, openKafkaProbe } from "@prefix-guard/bus/testing";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { callUnary } from "@prefix-guard/grpc";
import { silentLogger } from "@prefix-guard/logging";
import { PromptAssemblyClient } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Decision, RulesSnapshotClient } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { defaultTopicSpecs } from "@prefix-guard/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServiceName } from "../stack";
import { mainSessionRequest } from "../support";
import { auditedChains, auditedInserts, auditedInsertsBySession, installApplyAudit } from "./audit";
import { loadBuildRequest, SessionLoad } from "./load";
import {
  type PrivateMariadb,
  privateKafka,
  privateMariadb,
  randomPortBlock,
  type ServiceProcess,
  serviceProcess,
} from "./processes";

const SESSIONS = Number(process.env.DB_RESTART_SESSIONS ?? "120");
const MESSAGES_PER_SESSION = 19;
const LANES = 8;
const DOWN_AT = 0.3; // share of the load written when the server stops
const DOWN_MS = 4_000;
const WRITE_DEADLINE_MS = 5_000;
const RULES_DB_TIMEOUT_MS = 300;
const broker = privateKafka(Number(process.env.DB_RESTART_KAFKA_PORT ?? "29492"), ".run/kafka-db-restart");
const basePort = randomPortBlock(20_000, 400, 8);
const services: readonly ServiceName[] = ["session-events", "rules-snapshot", "prompt-assembly", "cache-monitor"];

describe("database restart under load", () => {
  let server: PrivateMariadb;
  const dbs = {} as Record<ServiceName, TestDatabase>;
  const procs = {} as Record<ServiceName, ServiceProcess>;
  let probe: KafkaProbe;
  let workspace: string;

  beforeAll(async () => {
    broker.run("reset");
    broker.run("start");
    const bus = createKafkaBus({ brokers: broker.brokers, clientId: "db-restart-setup", logger: silentLogger() });
    await bus.ensureTopics(defaultTopicSpecs());
    await bus.close();
    probe = await openKafkaProbe(broker.brokers);
    server = await privateMariadb(basePort + 7);
    await server.start();
    for (const name of services) dbs[name] = await createTestDatabase(name.replace("-", "_"), server.url);
    services.forEach((name, i) => {
      procs[name] = serviceProcess(name, basePort + i, {
        TRANSPORT: "kafka",
        KAFKA_BROKERS: broker.brokers.join(","),
        DATABASE_URL: dbs[name].url,
        SESSION_EVENTS_ADDRESS: `127.0.0.1:${basePort}`,
        RULES_SNAPSHOT_ADDRESS: `127.0.0.1:${basePort + 1}`,
        RULES_DB_TIMEOUT_MS: String(RULES_DB_TIMEOUT_MS),
      });
    });
    await Promise.all(services.map((name) => procs[name].start()));
    for (const name of ["rules-snapshot", "prompt-assembly", "cache-monitor"] as const)
      await installApplyAudit(dbs[name].db, name);
    workspace = mkdtempSync(join(tmpdir(), "pg-db-restart-"));
    writeFileSync(join(workspace, "AGENTS.md"), "# Rules\n- survive the database\n");
  }, 300_000);

  afterAll(async () => {
    await Promise.all(services.map((name) => procs[name]?.kill("SIGKILL")));
    await probe?.close();
    broker.run("stop");
    for (const db of Object.values(dbs)) await db.drop().catch(() => undefined);
    await server?.destroy();
  }, 120_000);

  it(`keeps every guarantee over ${SESSIONS * (MESSAGES_PER_SESSION + 1)} events with MariaDB stopped and started mid-load`, async () => {
    const insecure = credentials.createInsecure();
    const sessions = new SessionEventsClient(procs["session-events"].address, insecure);
    const assembly = new PromptAssemblyClient(procs["prompt-assembly"].address, insecure);
    const rules = new RulesSnapshotClient(procs["rules-snapshot"].address, insecure);
    const runId = Date.now().toString(36);
    const load = new SessionLoad({ client: () => sessions, deadlineMs: WRITE_DEADLINE_MS, retryDelayMs: 200 });
    const total = SESSIONS * (MESSAGES_PER_SESSION + 1);

    // Resolve of a pinned session, asked every 100 ms through the whole run.
    const resolveRequest = {
      sessionId: `resolve-${runId}`,
      workspace,
      source: { $case: "file" as const, value: { path: join(workspace, "AGENTS.md") } },
      compactionGeneration: 0,
      embed: false,
      locale: "",
    };
    const pinned = await callUnary(rules, rules.resolve, resolveRequest, { deadlineMs: 5_000 });
    expect(pinned.decision).toBe(Decision.DECISION_PINNED);
    const resolves: Array<{ at: number; ms: number; outcome: string; sameText: boolean; warning: string }> = [];
    let probing = true;
    const resolveProbe = (async () => {
      while (probing) {
        const started = Date.now();
        try {
          const r = await callUnary(rules, rules.resolve, resolveRequest, { deadlineMs: 5_000 });
          resolves.push({
            at: started,
            ms: Date.now() - started,
            outcome: Decision[r.decision],
            sameText: r.sectionText === pinned.sectionText,
            warning: r.warning,
          });
        } catch (error) {
          const code = (error as ServiceError).code;
          resolves.push({ at: started, ms: Date.now() - started, outcome: status[code], sameText: false, warning: "" });
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    let downAt = 0;
    let upAt = 0;
    // When the relay and prompt-assembly's consumer move again after the restart.
    const resumed = { relay: 0, consumer: 0 };
    let watching = true;
    const progress = async () => {
      const published = await dbs["session-events"]
        .db("session_event")
        .whereNotNull("published_at_ms")
        .count({ n: "*" })
        .first();
      const applied = await dbs["prompt-assembly"]
        .db("consumer_position")
        .where({ consumer: "prompt-assembly" })
        .sum({ n: "last_seq" })
        .first();
      return { relay: Number(published?.n ?? 0), consumer: Number(applied?.n ?? 0) };
    };
    const watcher = (async () => {
      let atUp: { relay: number; consumer: number } | undefined;
      while (watching) {
        const now = await progress().catch(() => undefined);
        if (now !== undefined && upAt > 0) {
          atUp ??= now;
          if (resumed.relay === 0 && now.relay > atUp.relay) resumed.relay = Date.now();
          if (resumed.consumer === 0 && now.consumer > atUp.consumer) resumed.consumer = Date.now();
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    const buildStatuses = new Map<string, number>();
    let restarting: Promise<void> | undefined;
    const restart = async () => {
      downAt = Date.now();
      await server.stop();
      await new Promise((r) => setTimeout(r, DOWN_MS));
      await server.start();
      upAt = Date.now();
    };
    const firstOkAfterRestart = { write: 0 };
    const started = Date.now();
    await Promise.all(
      Array.from({ length: LANES }, async (_, lane) => {
        for (let s = lane; s < SESSIONS; s += LANES) {
          const sessionId = `db-${runId}-${s}`;
          await load.create(lane, mainSessionRequest(sessionId, workspace, { owner: "db", timezone: "UTC" }));
          for (let m = 0; m < MESSAGES_PER_SESSION; m++) {
            const seq = await load.save(lane, sessionId, m);
            if (upAt > 0 && firstOkAfterRestart.write === 0) firstOkAfterRestart.write = Date.now();
            if (load.committed / total >= DOWN_AT && restarting === undefined) restarting = restart();
            if (seq % 5 !== 0) continue;
            // A build of a state this replica may or may not hold: served, or refused with a status.
            const outcome = await callUnary(
              assembly,
              assembly.buildRequest,
              loadBuildRequest(sessionId, seq, workspace, ["persona"]),
              { deadlineMs: WRITE_DEADLINE_MS },
            ).then(
              () => "OK",
              (error: ServiceError) => status[error.code],
            );
            buildStatuses.set(outcome, (buildStatuses.get(outcome) ?? 0) + 1);
          }
        }
      }),
    );
    await restarting;
    probing = false;
    watching = false;
    await Promise.all([resolveProbe, watcher]);
    const loadSeconds = (Date.now() - started) / 1000;

    // Writes failed fast and as UNAVAILABLE; none hung to its deadline, none was INTERNAL.
    expect(downAt).toBeGreaterThan(0);
    expect(load.committed).toBe(total);
    expect(load.statuses.get("UNAVAILABLE") ?? 0).toBeGreaterThan(0);
    expect([...load.statuses.keys()].filter((name) => !["OK", "UNAVAILABLE", "ABORTED"].includes(name))).toEqual([]);
    expect(load.slowestFailureMs).toBeLessThan(WRITE_DEADLINE_MS);

    // Resolve while the server was down: the raw rules with a warning, within its DB bound (seed 001 §7).
    const down = resolves.filter((r) => r.at > downAt + 200 && r.at + r.ms < upAt - 200);
    expect(down.length).toBeGreaterThan(0);
    for (const r of down) {
      expect(r.outcome).toBe("DECISION_DEGRADED_RAW");
      expect(r.sameText).toBe(true);
      expect(r.warning).not.toBe("");
      expect(r.ms).toBeLessThan(RULES_DB_TIMEOUT_MS + 1_000);
    }
    const afterUp = resolves.filter((r) => r.at > upAt);
    expect(afterUp.at(-1)?.outcome).toBe("DECISION_RETAINED");
    const resolveBack = afterUp.find((r) => r.outcome === "DECISION_RETAINED");
    // Every service came back by itself: writes, the relay and the consumer all moved again.
    expect(resumed.relay).toBeGreaterThan(0);
    expect(resumed.consumer).toBeGreaterThan(0);

    // Nothing half-written: every session's events are 1..last with the session row at last.
    const se = dbs["session-events"].db;
    const perSession = (await se("session_event")
      .select("session_id")
      .count({ n: "*" })
      .max({ top: "seq" })
      .groupBy("session_id")) as Array<{ session_id: string; n: number; top: number }>;
    const sessionRows = new Map(
      ((await se("session").select("session_id", "last_seq")) as Array<{ session_id: string; last_seq: number }>).map(
        (r) => [r.session_id, Number(r.last_seq)],
      ),
    );
    for (const row of perSession) {
      expect(Number(row.n)).toBe(Number(row.top));
      expect(sessionRows.get(row.session_id)).toBe(Number(row.top));
      expect(load.written.get(row.session_id)).toBe(Number(row.top));
    }
    expect(perSession).toHaveLength(SESSIONS);

    // Relay and consumers resumed: everything published and applied, each exactly once.
    await eventually(
      async () => Number((await se("session_event").whereNull("published_at_ms").count({ n: "*" }).first())?.n) === 0,
      { what: "relay drained", timeoutMs: 120_000 },
    );
    const pa = dbs["prompt-assembly"].db;
    await eventually(
      async () =>
        Number(
          (await pa("consumer_position").where({ consumer: "prompt-assembly" }).sum({ n: "last_seq" }).first())?.n,
        ) === total,
      { what: "prompt-assembly caught up", timeoutMs: 120_000, intervalMs: 250 },
    );
    for (const { group, topic } of [
      { group: "prompt-assembly", topic: "session.events.v1" },
      { group: "rules-snapshot", topic: "session.events.v1" },
      { group: "cache-monitor.prefix", topic: "prompt.prefix.v1" },
    ])
      await eventually(async () => (await probe.lag(group, topic)) === 0, {
        what: `${group} lag 0`,
        timeoutMs: 60_000,
      });
    const lastSeqs = new Map([...load.written].filter(([id]) => id.startsWith(`db-${runId}`)));
    const problems = [
      ...(await auditedChains(pa, "consumer_position", lastSeqs, [...lastSeqs.keys()])).problems,
      ...(await auditedChains(pa, "pa_session", lastSeqs, [...lastSeqs.keys()])).problems,
    ];
    expect(problems).toEqual([]);
    const messages = await auditedInsertsBySession(pa, "pa_message");
    for (const sessionId of lastSeqs.keys())
      expect(messages.get(sessionId), sessionId).toEqual({
        rows: MESSAGES_PER_SESSION,
        distinct: MESSAGES_PER_SESSION,
      });
    const published = await pa("outbox_message").where({ topic: "prompt.prefix.v1" }).count({ n: "*" }).first();
    await eventually(async () => (await auditedInserts(dbs["cache-monitor"].db)).rows >= Number(published?.n), {
      what: "cache-monitor stored every prefix event",
      timeoutMs: 60_000,
    });
    const stored = await auditedInserts(dbs["cache-monitor"].db);
    expect(stored.rows).toBe(Number(published?.n));
    expect(stored.rows).toBe(stored.distinct);
    const onTopic = await probe.readAll("session.events.v1", total);
    const distinctOnTopic = new Set(onTopic.map((m) => `${m.key}/${m.value.toString("base64")}`)).size;
    expect(distinctOnTopic).toBe(total);

    for (const c of [sessions, assembly, rules]) c.close();
    const describeCounts = (counts: ReadonlyMap<string, number>) =>
      [...counts].map(([name, n]) => `${name} ${n}`).join(", ");
    const resolveCounts = new Map<string, number>();
    for (const r of resolves) resolveCounts.set(r.outcome, (resolveCounts.get(r.outcome) ?? 0) + 1);
    process.stdout.write(
      [
        `db restart: ${total} events in ${loadSeconds.toFixed(1)} s; MariaDB down ${((upAt - downAt) / 1000).toFixed(1)} s (SIGTERM, then started again)`,
        `  writes by status: ${load.describeStatuses()}; slowest failed write ${load.slowestFailureMs} ms (deadline ${WRITE_DEADLINE_MS} ms)`,
        `  builds by status: ${describeCounts(buildStatuses)}`,
        `  Resolve by outcome: ${describeCounts(resolveCounts)}; while down: ${down.length} answers, slowest ${Math.max(...down.map((r) => r.ms))} ms`,
        `  recovery after the server was back: first write ${firstOkAfterRestart.write - upAt} ms, Resolve RETAINED ${(resolveBack?.at ?? upAt) - upAt} ms, relay publishing ${resumed.relay - upAt} ms, prompt-assembly consuming ${resumed.consumer - upAt} ms`,
        `  ${onTopic.length} messages on Kafka for ${total} events (${onTopic.length - total} republished), ${messages.size * MESSAGES_PER_SESSION} messages projected once, ${stored.rows} prefix events stored once`,
        "",
      ].join("\n"),
    );
  }, 420_000);
});
