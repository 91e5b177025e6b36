// One tree's services (session-events, rules-snapshot, prompt-assembly), each its own OS process on
// real Kafka and fresh MariaDB databases, the way deploy/scripts/stack.sh starts them.
import { join } from "node:path";
import { credentials } from "@grpc/grpc-js";
import { createDatabase, type Database } from "@prefix-guard/db";
import { callUnary } from "@prefix-guard/grpc";
import {
  type BuildRequestRequest,
  PromptAssemblyClient,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import { RulesSnapshotClient } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { progress } from "../stats";
import { turnTexts } from "./content";
import { type BenchProcess, freePort, heapProbeOptions, pidDir, sleep, startNode } from "./procs";

export const mysqlServerUrl = (process.env["TEST_MYSQL_URL"] ?? "mysql://root@127.0.0.1:3306").replace(/\/$/, "");
const call = { deadlineMs: 60_000 };

export type ServiceName = "session-events" | "rules-snapshot" | "prompt-assembly";
const serviceNames: readonly ServiceName[] = ["session-events", "rules-snapshot", "prompt-assembly"];

export interface Stack {
  readonly tag: string;
  readonly processes: Readonly<Record<ServiceName, BenchProcess>>;
  readonly sessions: SessionEventsClient;
  readonly assembly: PromptAssemblyClient;
  readonly rules: RulesSnapshotClient;
  /** prompt-assembly's own database (its projection tables). */
  readonly paDb: Database;
  readonly metricsUrl: string;
  /** Where prompt-assembly writes its heap after a full collection (retainedAfterCollection). */
  readonly heapProbeFile: string;
  stop(): Promise<void>;
}

export async function withAdmin<T>(work: (db: Database) => Promise<T>): Promise<T> {
  const admin = createDatabase(`${mysqlServerUrl}/mysql`, { poolMax: 1 });
  try {
    return await work(admin);
  } finally {
    await admin.destroy();
  }
}

export async function freshDatabase(name: string): Promise<string> {
  await withAdmin(async (db) => {
    await db.raw(`DROP DATABASE IF EXISTS \`${name}\``);
    await db.raw(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  });
  return `${mysqlServerUrl}/${name}`;
}

export async function dropDatabases(prefix: string): Promise<void> {
  await withAdmin(async (db) => {
    const [rows] = (await db.raw("SHOW DATABASES LIKE ?", [`${prefix}%`])) as [Record<string, string>[]];
    for (const row of rows) {
      const name = Object.values(row)[0];
      if (name?.startsWith(prefix)) await db.raw(`DROP DATABASE IF EXISTS \`${name}\``);
    }
  });
}

export async function startStack(options: {
  readonly repo: string;
  readonly tree: string;
  readonly tag: "before" | "after";
  readonly kafkaBrokers: string;
}): Promise<Stack> {
  const ports = Object.fromEntries(
    await Promise.all(
      serviceNames.map(async (s) => [s, { grpc: await freePort(), metrics: await freePort() }] as const),
    ),
  ) as Record<ServiceName, { grpc: number; metrics: number }>;
  const common = {
    TRANSPORT: "kafka",
    KAFKA_BROKERS: options.kafkaBrokers,
    LOG_LEVEL: "warn",
    SESSION_EVENTS_ADDRESS: `127.0.0.1:${ports["session-events"].grpc}`,
    RULES_SNAPSHOT_ADDRESS: `127.0.0.1:${ports["rules-snapshot"].grpc}`,
  };
  const extra: Record<ServiceName, Record<string, string>> = {
    // A 2,000-turn session is ~0.7 M characters: past the default quota.
    "session-events": { SESSION_CHARACTER_QUOTA: "10000000" },
    "rules-snapshot": {},
    "prompt-assembly": {},
  };
  const processes: Partial<Record<ServiceName, BenchProcess>> = {};
  const heapProbeFile = join(pidDir(options.repo), `${options.tag}-prompt-assembly.heap.json`);
  const heapProbe = heapProbeOptions(heapProbeFile);
  let paUrl = "";
  try {
    for (const service of serviceNames) {
      const url = await freshDatabase(`bench_speed_${options.tag}_${service.replace(/-/g, "_")}`);
      if (service === "prompt-assembly") paUrl = url;
      progress(`${options.tag}: starting ${service} on :${ports[service].grpc}`);
      processes[service] = await startNode({
        repo: options.repo,
        name: `${options.tag}-${service}`,
        cwd: options.tree,
        script: `services/${service}/src/main.ts`,
        env: {
          ...common,
          ...extra[service],
          ...(service === "prompt-assembly" ? heapProbe.env : {}),
          DATABASE_URL: url,
          GRPC_PORT: String(ports[service].grpc),
          METRICS_PORT: String(ports[service].metrics),
        },
        ...(service === "prompt-assembly" ? { nodeArgs: heapProbe.nodeArgs } : {}),
        port: ports[service].grpc,
        timeoutMs: 120_000,
      });
    }
  } catch (error) {
    for (const p of Object.values(processes)) await p.stop();
    throw error;
  }
  const insecure = credentials.createInsecure();
  const sessions = new SessionEventsClient(`127.0.0.1:${ports["session-events"].grpc}`, insecure);
  const assembly = new PromptAssemblyClient(`127.0.0.1:${ports["prompt-assembly"].grpc}`, insecure);
  const rules = new RulesSnapshotClient(`127.0.0.1:${ports["rules-snapshot"].grpc}`, insecure);
  const paDb = createDatabase(paUrl, { poolMax: 4 });
  return {
    tag: options.tag,
    processes: processes as Record<ServiceName, BenchProcess>,
    sessions,
    assembly,
    rules,
    paDb,
    metricsUrl: `http://127.0.0.1:${ports["prompt-assembly"].metrics}/metrics`,
    heapProbeFile,
    async stop() {
      sessions.close();
      assembly.close();
      rules.close();
      await paDb.destroy();
      // prompt-assembly first: it calls the other two.
      for (const service of [...serviceNames].reverse()) await processes[service]?.stop();
      await dropDatabases(`bench_speed_${options.tag}_`);
    },
  };
}

export async function scrape(url: string): Promise<string> {
  const response = await fetch(url);
  return response.text();
}

export async function createSession(stack: Stack, sessionId: string, workspace: string): Promise<number> {
  const created = await callUnary(
    stack.sessions,
    stack.sessions.createSession,
    {
      sessionId,
      owner: "bench",
      workspace,
      timezone: "Asia/Shanghai",
      kind: SessionKind.SESSION_KIND_MAIN,
      parentSessionId: "",
      continuedFromSessionId: "",
      personalTerms: [],
      locale: "",
    },
    call,
  );
  return created.seq;
}

export async function saveMessage(stack: Stack, sessionId: string, user: boolean, text: string): Promise<number> {
  return saveMessageVia(stack.sessions, sessionId, user, text);
}

/** SaveMessage on any server of that method: session-events, or the pipeline floor. */
export async function saveMessageVia(
  sessions: SessionEventsClient,
  sessionId: string,
  user: boolean,
  text: string,
): Promise<number> {
  const saved = await callUnary(
    sessions,
    sessions.saveMessage,
    {
      sessionId,
      role: user ? Role.ROLE_USER : Role.ROLE_ASSISTANT,
      content: [{ part: { $case: "text", value: { text } } }],
      thinkingText: "",
    },
    call,
  );
  return saved.seq;
}

/** Creates each session and saves its turns (sessions side by side, turns in order); returns last seqs. */
export async function fillSessions(
  stack: Stack,
  sessions: readonly { readonly id: string; readonly turns: number; readonly seed: number }[],
  workspace: string,
  concurrency: number,
): Promise<Map<string, number>> {
  const lastSeq = new Map<string, number>();
  let next = 0;
  let saved = 0;
  const total = sessions.reduce((a, s) => a + s.turns * 2, 0);
  let reported = Date.now();
  const worker = async () => {
    for (;;) {
      const session = sessions[next++];
      if (!session) return;
      let seq = await createSession(stack, session.id, workspace);
      for (let turn = 0; turn < session.turns; turn++) {
        const { user, assistant } = turnTexts(session.seed, turn);
        await saveMessage(stack, session.id, true, user);
        seq = await saveMessage(stack, session.id, false, assistant);
        saved += 2;
        if (Date.now() - reported > 10_000) {
          reported = Date.now();
          progress(`${stack.tag}: saved ${saved}/${total} messages`);
        }
      }
      lastSeq.set(session.id, seq);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return lastSeq;
}

/** Projected seq per session, from prompt-assembly's pa_session (or a table of the same two columns). */
export async function projectedSeqs(
  db: Database,
  sessionIds: readonly string[],
  table = "pa_session",
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let i = 0; i < sessionIds.length; i += 500) {
    const rows = (await db(table)
      .whereIn("session_id", sessionIds.slice(i, i + 500))
      .select("session_id", "last_seq")) as { session_id: string; last_seq: number | string }[];
    for (const row of rows) out.set(row.session_id, Number(row.last_seq));
  }
  return out;
}

/** Sum of the projected seqs of the sessions whose id starts with `prefix`: events applied to them. */
export async function sumProjected(db: Database, prefix: string, table = "pa_session"): Promise<number> {
  const row = (await db(table).where("session_id", "like", `${prefix}%`).sum({ total: "last_seq" }).first()) as
    | { total: number | string | null }
    | undefined;
  return Number(row?.total ?? 0);
}

export async function waitProjected(stack: Stack, expected: ReadonlyMap<string, number>, timeoutMs: number) {
  const ids = [...expected.keys()];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seqs = await projectedSeqs(stack.paDb, ids);
    const behind = ids.filter((id) => (seqs.get(id) ?? -1) < (expected.get(id) ?? 0)).length;
    if (behind === 0) return;
    if (Date.now() > deadline) {
      progress(`${stack.tag}: ${behind} sessions still not projected after ${timeoutMs} ms; going on`);
      return;
    }
    await sleep(200);
  }
}

export function buildRequest(
  sessionId: string,
  minSeq: number,
  workspace: string,
  rulesPath: string,
): BuildRequestRequest {
  return {
    sessionId,
    minSeq,
    sections: ["persona", "experiences", "memories", "environment", "tool-guide", "skills"].map((key) => ({
      key,
      text: `${key}: ${"s".repeat(800)}`,
    })),
    tools: Array.from({ length: 12 }, (_, i) => ({
      name: `tool_${i}`,
      description: `tool ${i}`,
      inputSchemaJson: '{"type":"object","properties":{"a":{"type":"string"}}}',
    })),
    wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
    model: "bench-model",
    workspace,
    rulesSource: { $case: "rulesFile", value: { path: rulesPath } },
    embed: false,
    locale: "zh-CN",
  };
}

export async function build(stack: Stack, request: BuildRequestRequest): Promise<string> {
  const response = await callUnary(stack.assembly, stack.assembly.buildRequest, request, call);
  return response.bodyJson;
}

/** Resolve of the rules file for a session (the first call pins, later ones are "retained"). */
/** `knownRulesHash`: the section the caller holds, as prompt-assembly names it (not for the baseline tree, which refuses the field). */
export async function resolveRules(
  stack: Stack,
  sessionId: string,
  workspace: string,
  rulesPath: string,
  knownRulesHash?: string,
) {
  return callUnary(
    stack.rules,
    stack.rules.resolve,
    {
      sessionId,
      workspace,
      source: { $case: "file", value: { path: rulesPath } },
      compactionGeneration: 0,
      embed: false,
      locale: "",
      ...(knownRulesHash === undefined ? {} : { knownRulesHash }),
    },
    call,
  );
}
