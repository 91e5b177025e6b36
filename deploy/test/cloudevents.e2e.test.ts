// CloudEvents headers and `prefixctl events tail` end to end (docs/decisions/cloudevents-headers.md).
// A short run of the real services on Kafka (a session built six
// times and priced until it collapses, a gateway conversation, a poison record that two consumers
// dead-letter) puts records on every topic; kcat, reading the broker from outside, must find the
// CloudEvents binding's headers on every one of this run's records, on every topic. Then
// `prefixctl events tail --session X --json`, run as its own process through the bin shim, follows
// a live session: its events arrive in order with their ce_* attributes, and SIGTERM ends it with
// exit 0. The same on `make run`'s embedded log.

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials } from "@grpc/grpc-js";
import { eventually, testKafkaBrokers, uniqueName } from "@prefix-guard/bus/testing";
import {
  CLOUDEVENTS_SPEC_VERSION,
  cloudEventDataSchema,
  cloudEventHeaders,
  cloudEventType,
  dlqTopic,
  EVENT_CONTENT_TYPE,
  type TopicName,
  Topics,
} from "@prefix-guard/events";
import { callUnary } from "@prefix-guard/grpc";
import { type BuildRequestResponse, WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventTypesByTopic } from "./event-messages";
import { type Stack, startStack } from "./stack";
import {
  claudeTestUsage,
  type GatewayOnFake,
  mainSessionRequest,
  priceBuild,
  repoRoot,
  saveAndBuild,
  sectionsWithSkills,
  startEmbeddedSystem,
  startGatewayOnFake,
  userTextMessage,
} from "./support";

const deadline = { deadlineMs: 10_000 };
const brokers = testKafkaBrokers.join(",");
const eventTypes = eventTypesByTopic();

/** Which services may publish on each topic (README "Event catalog"). */
const PRODUCERS: Readonly<Record<TopicName, readonly string[]>> = {
  "session.events.v1": ["session-events"],
  "rules.snapshot.v1": ["rules-snapshot"],
  "prompt.prefix.v1": ["prompt-assembly", "gateway"],
  "llm.usage.v1": ["cache-monitor", "gateway"],
  "cache.collapse.v1": ["cache-monitor"],
};

// ---------------------------------------------------------------------------------------------
// The broker read from outside, with kcat (installed by deploy/scripts/erasure-tools.sh).

interface KcatRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly headers: Readonly<Record<string, string>>;
}

function kcatReady(): { ready: boolean; why: string } {
  const run = spawnSync("bash", [join(repoRoot, "deploy/scripts/erasure-tools.sh")], {
    encoding: "utf8",
    timeout: 540_000,
  });
  return { ready: run.status === 0, why: `erasure-tools.sh exit ${run.status}: ${(run.stderr ?? "").trim()}` };
}

/** Every record of `topic` written since `sinceMs` (broker time), as kcat -J prints it. */
function kcatRecords(topic: string, sinceMs: number): KcatRecord[] {
  const run = spawnSync("kcat", ["-b", brokers, "-C", "-e", "-q", "-J", "-t", topic, "-o", `s@${sinceMs}`], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
    timeout: 60_000,
  });
  if (run.status !== 0) throw new Error(`kcat -C -t ${topic} failed: ${run.stderr}`);
  return run.stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const raw = JSON.parse(line) as {
        topic: string;
        partition: number;
        offset: number;
        key: string | null;
        headers?: string[];
      };
      const headers: Record<string, string> = {};
      const flat = raw.headers ?? [];
      for (let i = 0; i + 1 < flat.length; i += 2) headers[flat[i] as string] = flat[i + 1] as string;
      return { topic: raw.topic, partition: raw.partition, offset: raw.offset, key: raw.key, headers };
    });
}

/** What is wrong with one record's CloudEvents headers (empty when nothing is). */
function cloudEventProblems(record: KcatRecord): string[] {
  const main = (record.topic.endsWith(".dlq") ? record.topic.slice(0, -4) : record.topic) as TopicName;
  const h = record.headers;
  const problems: string[] = [];
  const expect = (ok: boolean, what: string) => {
    if (!ok) problems.push(what);
  };
  expect(h.ce_specversion === CLOUDEVENTS_SPEC_VERSION, `ce_specversion ${h.ce_specversion}`);
  expect((h.ce_id ?? "").length > 0, "ce_id missing");
  expect(
    PRODUCERS[main].some((service) => h.ce_source === `prefix-guard/${service}`),
    `ce_source ${h.ce_source} is not a producer of ${main}`,
  );
  const types = (eventTypes.get(main) ?? []).map((type) => cloudEventType(main, type));
  expect(types.includes(h.ce_type ?? ""), `ce_type ${h.ce_type} is not an event type of ${main}`);
  expect(
    h["pg-event-type"] !== undefined && h.ce_type?.endsWith(`.${h["pg-event-type"]}`) === true,
    `pg-event-type ${h["pg-event-type"]} does not match ce_type ${h.ce_type}`,
  );
  expect(
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(h.ce_time ?? "") &&
      !Number.isNaN(Date.parse(h.ce_time ?? "")),
    `ce_time ${h.ce_time} is not RFC 3339`,
  );
  expect(h.ce_subject === record.key, `ce_subject ${h.ce_subject} is not the key ${record.key}`);
  expect(h["content-type"] === EVENT_CONTENT_TYPE, `content-type ${h["content-type"]}`);
  expect(h.ce_dataschema === cloudEventDataSchema(main), `ce_dataschema ${h.ce_dataschema}`);
  if (main === Topics.sessionEvents) expect(/^\d+$/.test(h["pg-seq"] ?? ""), "pg-seq missing");
  if (record.topic.endsWith(".dlq")) expect(h["pg-dlq-reason"] !== undefined, "pg-dlq-reason missing");
  return problems;
}

// ---------------------------------------------------------------------------------------------
// `prefixctl events tail` as an SRE runs it: the bin shim, its own process, stopped by a signal.

interface TailLine {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: string;
  readonly ce: Record<string, string>;
  readonly dlq_reason?: string;
  readonly event?: { eventId?: string; sessionId?: string; seq?: number; type?: string; occurredAtMs?: number };
  readonly decode_error?: string;
}

interface RunningTail {
  lines(): TailLine[];
  stderr(): string;
  /** Sends the signal; resolves with the exit code (null when a signal killed it). */
  stop(signal: NodeJS.Signals): Promise<number | null>;
}

async function startTail(args: readonly string[]): Promise<RunningTail> {
  const child: ChildProcess = spawn(
    process.execPath,
    [join(repoRoot, "libs/prefixctl/bin/prefixctl.mjs"), "events", "tail", "--json", ...args],
    { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let done = false;
  void exited.then(() => (done = true));
  // Ready once it says where it starts: every record published from then on is shown.
  await eventually(
    () => {
      if (done) throw new Error(`prefixctl events tail exited early: ${stderr}`);
      return stderr.includes("Ctrl-C stops");
    },
    { what: `prefixctl events tail to start (stderr: ${stderr})`, timeoutMs: 30_000 },
  );
  return {
    lines: () =>
      stdout
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => JSON.parse(line) as TailLine),
    stderr: () => stderr,
    async stop(signal) {
      if (!done) child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Every line of the tail carries its record's CloudEvents attributes, matching the decoded envelope. */
function expectTailAttributes(lines: readonly TailLine[], sessionId: string): void {
  for (const line of lines) {
    const main = line.topic as TopicName;
    expect(line.key).toBe(sessionId);
    expect(line.decode_error).toBeUndefined();
    expect(line.ce).toMatchObject({
      specversion: "1.0",
      id: line.event?.eventId,
      type: cloudEventType(main, line.event?.type ?? "?"),
      time: new Date(line.event?.occurredAtMs ?? 0).toISOString(),
      subject: sessionId,
      datacontenttype: "application/protobuf",
      dataschema: cloudEventDataSchema(main),
    });
  }
}

// ---------------------------------------------------------------------------------------------

describe("CloudEvents on Kafka, and prefixctl events tail following a live session", () => {
  const tools = kcatReady();
  let clock = Date.UTC(2026, 9, 14, 5, 0, 0);
  const now = () => clock;
  const workspace = mkdtempSync(join(tmpdir(), "pg-ce-ws-"));
  const builtSession = uniqueName("ce-built");
  const gatewaySession = uniqueName("ce-gateway");
  const poisonSession = uniqueName("ce-poison");
  const tailedSession = uniqueName("ce-tailed");
  let stack: Stack;
  let proxy: GatewayOnFake;
  let startedAtMs: number;

  beforeAll(async () => {
    startedAtMs = Date.now() - 1_000;
    stack = await startStack({ transport: "kafka", cacheMonitor: true, now });
    proxy = await startGatewayOnFake(stack.bus);
  });

  afterAll(async () => {
    await proxy?.stop();
    await stack?.stop();
    rmSync(workspace, { recursive: true, force: true });
  });

  const build = (sessionId: string, skills: string): Promise<BuildRequestResponse> =>
    saveAndBuild(stack, sessionId, `turn ${clock}`, {
      sections: sectionsWithSkills(skills),
      tools: [],
      wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
      model: "claude-test",
      workspace,
      // Pinned by rules-snapshot on the first build: a rules.snapshot.v1 event.
      rulesSource: { $case: "rulesContent", value: { text: "# Rules\n- answer briefly\n" } },
      embed: false,
      locale: "",
    });

  const recordUsage = (sessionId: string, requestId: string, cachedTokens: number) =>
    priceBuild(stack, sessionId, requestId, claudeTestUsage(cachedTokens, clock));

  it("kcat finds the ce_* headers on every record of this run on every topic, DLQ copies keeping the original's", async (context) => {
    if (!tools.ready) context.skip(tools.why);
    // Our builds: a session, six builds priced like a warm cache until the skills change collapses it.
    await callUnary(
      stack.sessions,
      stack.sessions.createSession,
      mainSessionRequest(builtSession, workspace),
      deadline,
    );
    for (let turn = 0; turn < 5; turn++) {
      const built = await build(builtSession, "skills v1");
      await recordUsage(builtSession, built.requestId, turn === 0 ? 0 : 39_500);
      clock += 60_000;
    }
    const changed = await build(builtSession, "skills v2: a new skill");
    const collapse = await recordUsage(builtSession, changed.requestId, 1_024);
    expect(collapse.collapse).toBeDefined();

    // A harness through the gateway: its observations and usage go out on its own outbox.
    for (const text of ["Find the config loader", "And the tests?"]) {
      const response = await fetch(`${proxy.gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sk-e2e" },
        body: JSON.stringify({
          model: "gpt-4o",
          prompt_cache_key: gatewaySession,
          messages: [
            { role: "system", content: `You are a careful agent. ${"Follow the conventions. ".repeat(300)}` },
            { role: "user", content: text },
          ],
        }),
      });
      expect(response.status).toBe(200);
      await response.text();
    }

    // A record no consumer can decode, with the headers of a real one: both session.events.v1
    // consumers of this stack dead-letter it, and each DLQ copy must keep its ce_* as they were.
    const poisonHeaders = cloudEventHeaders(Topics.sessionEvents, "session-events", {
      eventId: uniqueName("poison-event"),
      sessionId: poisonSession,
      occurredAtMs: clock,
      type: "MessageSaved",
    });
    await stack.bus.publish(Topics.sessionEvents, [
      {
        key: poisonSession,
        value: Uint8Array.from([0xde, 0xad, 0xbe, 0xef, 0xff]),
        headers: { ...poisonHeaders, "pg-event-type": "MessageSaved", "pg-seq": "1" },
      },
    ]);

    const ours = new Set([builtSession, gatewaySession, poisonSession]);
    const mainTopics = Object.values(Topics);
    const allTopics = mainTopics.flatMap((topic) => [topic, dlqTopic(topic)]);
    const read = () =>
      allTopics.flatMap((topic) => kcatRecords(topic, startedAtMs)).filter((r) => ours.has(r.key ?? ""));
    // Every main topic has records of this run, and the DLQ both consumers' copies of the poison.
    let seen = "";
    const records = await eventually(
      () => {
        const found = read();
        const perTopic = new Map<string, number>();
        for (const record of found) perTopic.set(record.topic, (perTopic.get(record.topic) ?? 0) + 1);
        seen = JSON.stringify(Object.fromEntries(perTopic));
        const dead = perTopic.get(dlqTopic(Topics.sessionEvents)) ?? 0;
        const sources = new Set(found.map((r) => r.headers.ce_source));
        return mainTopics.every((topic) => perTopic.has(topic)) && dead >= 2 && sources.has("prefix-guard/gateway")
          ? found
          : undefined;
      },
      { what: "this run's records on every topic and two DLQ copies", timeoutMs: 60_000, intervalMs: 1_000 },
    ).catch((error: Error) => {
      throw new Error(`${error.message}; records per topic: ${seen}`);
    });

    const problems = records.flatMap((record) =>
      cloudEventProblems(record).map((problem) => `${record.topic}/${record.partition}@${record.offset}: ${problem}`),
    );
    expect(problems).toEqual([]);
    const sources = [...new Set(records.map((r) => r.headers.ce_source))].sort();
    expect(sources).toEqual(
      ["cache-monitor", "gateway", "prompt-assembly", "rules-snapshot", "session-events"].map(
        (s) => `prefix-guard/${s}`,
      ),
    );
    for (const dead of records.filter((r) => r.topic.endsWith(".dlq"))) {
      expect(dead.headers).toMatchObject({ ...poisonHeaders, "pg-dlq-reason": "undecodable" });
      expect(dead.headers["pg-dlq-source"]).toMatch(/^session\.events\.v1\/\d+\/\d+$/);
    }
    // ce_id is the event's id: one per event, on whichever topic it is (a relay retry could repeat a
    // record, never give one event two ids or two events one id).
    const byId = new Map<string, string>();
    for (const record of records.filter((r) => !r.topic.endsWith(".dlq"))) {
      const what = `${record.headers.ce_type}|${record.headers.ce_time}|${record.key}`;
      expect(byId.get(record.headers.ce_id ?? "") ?? what, `ce_id ${record.headers.ce_id}`).toBe(what);
      byId.set(record.headers.ce_id ?? "", what);
    }
  });

  it("prefixctl events tail --session X --json follows a live session in order, with ce_* attributes, until SIGTERM (exit 0)", async () => {
    const tail = await startTail(["--session", tailedSession, "--brokers", brokers]);
    try {
      await callUnary(
        stack.sessions,
        stack.sessions.createSession,
        mainSessionRequest(tailedSession, workspace),
        deadline,
      );
      const first = await build(tailedSession, "skills v1");
      clock += 60_000;
      const second = await build(tailedSession, "skills v2");
      await recordUsage(tailedSession, second.requestId, 0);

      const lines = await eventually(
        () => {
          const seen = tail.lines();
          const saved = seen.filter((l) => l.topic === Topics.sessionEvents);
          const prefix = seen.filter((l) => l.topic === Topics.promptPrefix);
          const usage = seen.filter((l) => l.topic === Topics.llmUsage);
          return saved.length >= 3 && prefix.length >= 3 && usage.length >= 1 ? seen : undefined;
        },
        { what: `the tailed session's events (stderr: ${tail.stderr()})`, timeoutMs: 60_000 },
      );
      expectTailAttributes(lines, tailedSession);
      // session.events.v1: SessionCreated, then each SaveMessage, seq 1, 2, 3 with nothing between.
      const session = lines.filter((l) => l.topic === Topics.sessionEvents);
      expect(session.map((l) => [l.event?.seq, l.event?.type])).toEqual([
        [1, "SessionCreated"],
        [2, "MessageSaved"],
        [3, "MessageSaved"],
      ]);
      expect(session.every((l) => l.ce.source === "prefix-guard/session-events")).toBe(true);
      // prompt.prefix.v1: each build's FingerprintObserved, in build order; the second build changed.
      const prefix = lines.filter((l) => l.topic === Topics.promptPrefix);
      expect(prefix.map((l) => l.event?.type)).toEqual(["FingerprintObserved", "FingerprintObserved", "PrefixChanged"]);
      expect((prefix[0]?.event as { requestId?: string } | undefined)?.requestId).toBe(first.requestId);
      expect(lines.find((l) => l.topic === Topics.llmUsage)?.ce.source).toBe("prefix-guard/cache-monitor");
      // Offsets only grow within a partition.
      for (const topic of new Set(lines.map((l) => l.topic))) {
        const offsets = lines.filter((l) => l.topic === topic).map((l) => Number(l.offset));
        expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      }
    } finally {
      const code = await tail.stop("SIGTERM");
      expect(code, tail.stderr()).toBe(0);
    }
  });
});

describe("prefixctl events tail on make run's embedded log", () => {
  it("reads .data/bus.sqlite read-only while make run writes it: a live session's events with ce_*, SIGTERM exits 0", async () => {
    const system = await startEmbeddedSystem();
    const sessionId = uniqueName("ce-embedded");
    const sessions = new SessionEventsClient(system.addresses.sessionEvents, credentials.createInsecure());
    let tail: RunningTail | undefined;
    try {
      tail = await startTail(["--session", sessionId, "--embedded", join(system.dataDir, "bus.sqlite")]);
      await callUnary(sessions, sessions.createSession, mainSessionRequest(sessionId, system.dataDir), deadline);
      await callUnary(sessions, sessions.saveMessage, userTextMessage(sessionId, "hello"), deadline);
      await callUnary(sessions, sessions.saveMessage, userTextMessage(sessionId, "again"), deadline);
      const running = tail;
      const lines = await eventually(
        () => {
          const seen = running.lines().filter((l) => l.topic === Topics.sessionEvents);
          return seen.length >= 3 ? seen : undefined;
        },
        { what: `the embedded session's events (stderr: ${running.stderr()})`, timeoutMs: 30_000 },
      );
      expectTailAttributes(lines, sessionId);
      expect(lines.map((l) => [l.event?.seq, l.event?.type])).toEqual([
        [1, "SessionCreated"],
        [2, "MessageSaved"],
        [3, "MessageSaved"],
      ]);
      expect(lines.every((l) => l.ce.source === "prefix-guard/session-events")).toBe(true);
    } finally {
      sessions.close();
      const code = await tail?.stop("SIGTERM");
      await system.stop();
      rmSync(system.dataDir, { recursive: true, force: true });
      // Only when it started: otherwise the error that stopped it is the one to see.
      if (tail !== undefined) expect(code, tail.stderr()).toBe(0);
    }
  });
});
