// Fault suite (docs/decisions/fault-suites.md): services as real processes on a dedicated Kafka
// broker and MariaDB; a 10k event load while each service is SIGKILLed at random points and the
// broker is stopped and restarted; then counting in MariaDB and on Kafka. Also: DB connections
// killed during Resolve, and garbage / oversized messages on the topic.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, type ServiceError, status } from "@grpc/grpc-js";
import { createKafkaBus } from "@prefix-guard/bus";
import { eventually, uniqueName } from "@prefix-guard/bus/testing";
import { createDatabase } from "@prefix-guard/db";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { decodeSessionEvent } from "@prefix-guard/events";
import { callUnary } from "@prefix-guard/grpc";
import { silentLogger } from "@prefix-guard/logging";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { Decision, RulesSnapshotClient } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { defaultTopicSpecs } from "@prefix-guard/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mainSessionRequest } from "../support";
import { privateKafka, randomPortBlock, type ServiceProcess, serviceProcess } from "./processes";

const SESSIONS = Number(process.env.FAULT_SESSIONS ?? "200");
const MESSAGES_PER_SESSION = Number(process.env.FAULT_MESSAGES ?? "49"); // + SessionCreated = 50 events each
const kafkaPort = Number(process.env.FAULT_KAFKA_PORT ?? "29292");
const basePort = randomPortBlock(10_000, 500, 4);
const broker = privateKafka(kafkaPort, ".run/kafka-faults");
const kafka = (command: "reset" | "start" | "stop") => broker.run(command);
const brokers = broker.brokers;

/** Deterministic pseudo-random points (mulberry32), so a failing run can be replayed with the same seed. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("fault suite: SIGKILL, broker restart, DB drops, garbage on the bus", () => {
  const dbs: Record<string, TestDatabase> = {};
  const procs: Record<string, ServiceProcess> = {};
  const seed = Number(process.env.FAULT_SEED ?? Date.now() % 100_000);
  const random = rng(seed);
  let workspace: string;

  beforeAll(async () => {
    kafka("reset");
    kafka("start");
    const bus = createKafkaBus({ brokers, clientId: "faults-setup", logger: silentLogger() });
    await bus.ensureTopics(defaultTopicSpecs());
    await bus.close();
    for (const name of ["session-events", "rules-snapshot", "prompt-assembly"])
      dbs[name] = await createTestDatabase(`fault_${name.replace("-", "_")}`);
    const common = {
      TRANSPORT: "kafka",
      KAFKA_BROKERS: brokers.join(","),
      RULES_DB_TIMEOUT_MS: "300",
      BUS_MAX_MESSAGE_BYTES: String(256 * 1024),
    };
    const ports = { "session-events": basePort, "rules-snapshot": basePort + 1, "prompt-assembly": basePort + 2 };
    for (const [name, port] of Object.entries(ports)) {
      procs[name] = serviceProcess(name, port, {
        ...common,
        DATABASE_URL: dbs[name]!.url,
        SESSION_EVENTS_ADDRESS: `127.0.0.1:${ports["session-events"]}`,
        RULES_SNAPSHOT_ADDRESS: `127.0.0.1:${ports["rules-snapshot"]}`,
      });
    }
    for (const p of Object.values(procs)) await p.start();
    workspace = mkdtempSync(join(tmpdir(), "pg-faults-"));
    writeFileSync(join(workspace, "AGENTS.md"), "# Rules\n- keep it byte-stable\n");
  });
  afterAll(async () => {
    for (const p of Object.values(procs)) await p.kill("SIGTERM");
    kafka("stop");
    for (const db of Object.values(dbs)) await db.drop();
  });

  it(`loses nothing and applies nothing twice over ${SESSIONS * (MESSAGES_PER_SESSION + 1)} events with every service SIGKILLed and Kafka restarted`, async () => {
    const client = () => new SessionEventsClient(procs["session-events"]!.address, credentials.createInsecure());
    let sessions = client();
    const written = new Map<string, number>();
    let retries = 0;
    /** A write that survives a dead server: retried with expected_seq so a write that did land is never repeated. */
    async function writeWithRetry(sessionId: string, attempt: () => Promise<number>): Promise<void> {
      for (let i = 0; ; i++) {
        try {
          written.set(sessionId, await attempt());
          return;
        } catch (error) {
          const code = (error as ServiceError).code;
          if (code === status.ABORTED || code === status.ALREADY_EXISTS) {
            // The earlier attempt committed before the crash: take the server's truth.
            const s = await callUnary(sessions, sessions.getSession, { sessionId }, { deadlineMs: 5_000 }).catch(
              () => undefined,
            );
            if (s && s.lastSeq >= (written.get(sessionId) ?? 0) + 1) {
              written.set(sessionId, s.lastSeq);
              return;
            }
          }
          if (i > 200) throw error;
          retries += 1;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
    const ids = Array.from({ length: SESSIONS }, (_, i) => `fault-${seed}-${i}`);
    const total = SESSIONS * (MESSAGES_PER_SESSION + 1);
    let done = 0;
    const chaos = (async () => {
      // Kill each service at a random point of the load, and stop Kafka once for a few seconds.
      const plan = [
        {
          at: 0.15 + random() * 0.1,
          act: async () => {
            await procs["session-events"]!.kill();
            await procs["session-events"]!.start();
            sessions.close();
            sessions = client();
          },
        },
        {
          at: 0.3 + random() * 0.1,
          act: async () => {
            await procs["prompt-assembly"]!.kill();
            await procs["prompt-assembly"]!.start();
          },
        },
        {
          at: 0.45 + random() * 0.1,
          act: async () => {
            kafka("stop");
            await new Promise((r) => setTimeout(r, 3_000));
            kafka("start");
          },
        },
        {
          at: 0.65 + random() * 0.1,
          act: async () => {
            await procs["rules-snapshot"]!.kill();
            await procs["rules-snapshot"]!.start();
          },
        },
      ];
      for (const step of plan) {
        await eventually(() => done / total >= step.at, {
          timeoutMs: 300_000,
          intervalMs: 20,
          what: `load at ${step.at}`,
        });
        await step.act();
      }
    })();
    const md = { deadlineMs: 5_000 };
    const lanes = 16;
    await Promise.all(
      Array.from({ length: lanes }, async (_, lane) => {
        for (let s = lane; s < ids.length; s += lanes) {
          const sessionId = ids[s]!;
          await writeWithRetry(
            sessionId,
            async () =>
              (
                await callUnary(
                  sessions,
                  sessions.createSession,
                  mainSessionRequest(sessionId, workspace, { owner: "load" }),
                  md,
                )
              ).seq,
          );
          done += 1;
          for (let m = 0; m < MESSAGES_PER_SESSION; m++) {
            await writeWithRetry(
              sessionId,
              async () =>
                (
                  await callUnary(
                    sessions,
                    sessions.saveMessage,
                    {
                      sessionId,
                      role: m % 2 === 0 ? Role.ROLE_USER : Role.ROLE_ASSISTANT,
                      content: [{ part: { $case: "text", value: { text: `load ${m}` } } }],
                      thinkingText: "",
                      expectedSeq: written.get(sessionId) ?? 0,
                    },
                    md,
                  )
                ).seq,
            );
            done += 1;
          }
        }
      }),
    );
    await chaos;
    sessions.close();

    // Truth: session-events' own store.
    const se = dbs["session-events"]!.db;
    const storedEvents = Number((await se("session_event").count({ n: "*" }).first())?.n);
    expect(storedEvents).toBe(total);
    await eventually(
      async () => Number((await se("session_event").whereNull("published_at_ms").count({ n: "*" }).first())?.n) === 0,
      { what: "relay backlog drained", timeoutMs: 120_000 },
    );

    // Consumers: every session at its last seq, every message once.
    const pa = dbs["prompt-assembly"]!.db;
    await eventually(
      async () =>
        Number(
          (await pa("consumer_position").where({ consumer: "prompt-assembly" }).sum({ n: "last_seq" }).first())?.n,
        ) === total,
      { what: "prompt-assembly caught up", timeoutMs: 180_000, intervalMs: 500 },
    );
    const projected = Number((await pa("pa_message").count({ n: "*" }).first())?.n);
    expect(projected).toBe(SESSIONS * MESSAGES_PER_SESSION);

    // Kafka: every (session, seq) present; duplicates counted, never required.
    const bus = createKafkaBus({ brokers, clientId: "faults-count", logger: silentLogger() });
    const seen = new Map<string, Set<number>>();
    let onTopic = 0;
    const sub = await bus.subscribe({
      topic: "session.events.v1",
      groupId: uniqueName("count"),
      handleMessage: async (m) => {
        onTopic += 1;
        try {
          const e = decodeSessionEvent(m.value);
          seen.set(e.sessionId, (seen.get(e.sessionId) ?? new Set()).add(e.seq));
        } catch {
          // garbage published by the next test may already be there
        }
      },
    });
    await eventually(() => ids.every((id) => seen.get(id)?.size === MESSAGES_PER_SESSION + 1), {
      what: "every event on Kafka",
      timeoutMs: 120_000,
    });
    await sub.stop();
    await bus.close();
    const lost = ids.reduce((n, id) => n + (MESSAGES_PER_SESSION + 1 - (seen.get(id)?.size ?? 0)), 0);
    const duplicates = onTopic - ids.reduce((n, id) => n + (seen.get(id)?.size ?? 0), 0);
    expect(lost).toBe(0);
    process.stdout.write(
      `faults (seed ${seed}): ${total} events sent, ${storedEvents} stored, ${onTopic} received on Kafka, ${Math.max(0, duplicates)} duplicated, ${lost} lost, ${projected} messages projected once; client retries ${retries}; restarts: ${Object.values(
        procs,
      )
        .map((p) => `${p.name} ${p.restarts}`)
        .join(", ")}, kafka 1\n`,
    );
  });

  it("degrades Resolve to the raw rules while its DB is unreachable or hung, and recovers", async () => {
    const rules = new RulesSnapshotClient(procs["rules-snapshot"]!.address, credentials.createInsecure());
    const request = (sessionId: string) => ({
      sessionId,
      workspace,
      source: { $case: "file" as const, value: { path: join(workspace, "AGENTS.md") } },
      compactionGeneration: 0,
      embed: false,
      locale: "",
    });
    const resolve = () => callUnary(rules, rules.resolve, request("resolve-drop"), { deadlineMs: 5_000 });
    const first = await resolve();
    expect(first.decision).toBe(Decision.DECISION_PINNED);
    const decisions: string[] = [];
    // 1) Connections dropped under it: the pool reconnects; never an error, same bytes.
    const admin = await createTestDatabase("fault_admin");
    try {
      for (let round = 0; round < 3; round++) {
        const rows = (
          await admin.db.raw("SELECT id FROM information_schema.processlist WHERE db = ?", [
            dbs["rules-snapshot"]!.name,
          ])
        )[0] as Array<{ id: number }>;
        for (const row of rows) await admin.db.raw(`KILL ${Number(row.id)}`).catch(() => undefined);
        const response = await resolve();
        decisions.push(Decision[response.decision]);
        expect(response.sectionText).toBe(first.sectionText);
      }
    } finally {
      await admin.drop();
    }
    // 2) The table hung behind a write lock: Resolve answers within its bound with the raw rules.
    const locker = createDatabase(dbs["rules-snapshot"]!.url, { poolMax: 1 });
    await locker.transaction(async (trx) => {
      await trx.raw("LOCK TABLES session_workspace_rules WRITE");
      try {
        const started = Date.now();
        const degraded = await resolve();
        decisions.push(Decision[degraded.decision]);
        expect(degraded.decision).toBe(Decision.DECISION_DEGRADED_RAW);
        expect(degraded.warning).not.toBe("");
        expect(degraded.sectionText).toBe(first.sectionText);
        expect(Date.now() - started).toBeLessThan(3_000);
      } finally {
        await trx.raw("UNLOCK TABLES");
      }
    });
    await locker.destroy();
    await eventually(async () => (await resolve()).decision === Decision.DECISION_RETAINED, {
      what: "Resolve back to RETAINED",
    });
    rules.close();
    process.stdout.write(`faults: Resolve under DB faults → ${decisions.join(", ")}; recovered to DECISION_RETAINED\n`);
  });

  it("sends garbage and oversized messages to the DLQ and keeps consuming", async () => {
    const bus = createKafkaBus({ brokers, clientId: "faults-garbage", logger: silentLogger() });
    const sessions = new SessionEventsClient(procs["session-events"]!.address, credentials.createInsecure());
    const sessionId = `garbage-${seed}`;
    await bus.publish("session.events.v1", [
      { key: sessionId, value: new Uint8Array([0xde, 0xad, 0xbe, 0xef, 0xff]) },
      { key: sessionId, value: new Uint8Array(512 * 1024).fill(7) },
    ]);
    const created = await callUnary(
      sessions,
      sessions.createSession,
      mainSessionRequest(sessionId, workspace, { owner: "g" }),
      { deadlineMs: 5_000 },
    );
    const dead: Array<{ reason: string | undefined; group: string | undefined }> = [];
    const sub = await bus.subscribe({
      topic: "session.events.v1.dlq",
      groupId: uniqueName("dlq"),
      handleMessage: async (m) =>
        void dead.push({ reason: m.headers["pg-dlq-reason"], group: m.headers["pg-dlq-group"] }),
    });
    const pa = dbs["prompt-assembly"]!.db;
    await eventually(
      async () =>
        Number(
          (await pa("consumer_position").where({ consumer: "prompt-assembly", session_id: sessionId }).first())
            ?.last_seq ?? 0,
        ) === created.seq,
      { what: "the valid event after the garbage applied" },
    );
    await eventually(
      () =>
        dead.filter((d) => d.group === "prompt-assembly").length >= 2 &&
        dead.filter((d) => d.group === "rules-snapshot").length >= 2,
      { what: "both consumers dead-lettered both messages" },
    );
    await sub.stop();
    await bus.close();
    sessions.close();
    const reasons = dead
      .filter((d) => d.group === "prompt-assembly")
      .map((d) => d.reason)
      .sort();
    expect(reasons).toEqual(["oversized", "undecodable"]);
    process.stdout.write(
      `faults: garbage + oversized → DLQ (${dead.length} dead letters across consumers), consumption continued\n`,
    );
  });
});
