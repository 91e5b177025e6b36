// The Python example consumer against the real Kafka test broker: real SessionEvent envelopes
// encoded by @prefix-guard/events, decoded by protoc-generated Python from the committed .proto files.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKafkaBus, type MessageBus } from "@prefix-guard/bus";
import { testKafkaBrokers, uniqueName } from "@prefix-guard/bus/testing";
import { encodeSessionEvent, newEventId, SESSION_EVENT_SCHEMA_VERSION } from "@prefix-guard/events";
import { silentLogger } from "@prefix-guard/logging";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DebianTooling, installPythonTooling, repoRoot } from "./support";

const python = "/usr/bin/python3";
const consumerScript = join(repoRoot, "deploy/examples/python-consumer/consume_session_events.py");
// Debian's protoc matches Debian's python3-protobuf; a newer protoc elsewhere on PATH may not.
const protoc = existsSync("/usr/bin/protoc") ? "/usr/bin/protoc" : "protoc";

interface ConsumerLine {
  session_id: string;
  seq: number;
  type: string;
  event_id: string;
  occurred_at_ms: number;
  payload: Record<string, unknown>;
}

function runConsumer(
  args: readonly string[],
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [consumerScript, ...args], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`python consumer did not exit in ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.once("error", reject);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const text = (value: string) => ({ part: { $case: "text" as const, value: { text: value } } });

describe("python consumer of session.events.v1 on the real Kafka broker", () => {
  let tooling: DebianTooling;
  let genDir: string | undefined;
  let bus: MessageBus | undefined;
  const topic = uniqueName("py-session-events");

  beforeAll(() => {
    tooling = installPythonTooling();
    if (!tooling.ready) return;
    genDir = mkdtempSync(join(tmpdir(), "pg-pb2-"));
    const generated = spawnSync(
      protoc,
      [
        "-I",
        "proto",
        `--python_out=${genDir}`,
        "proto/prefixguard/common/v1/common.proto",
        "proto/prefixguard/events/v1/session_events.proto",
      ],
      { cwd: repoRoot, encoding: "utf8" },
    );
    if (generated.status !== 0) throw new Error(`protoc failed: ${generated.stderr}`);
  }, 600_000);
  afterAll(async () => {
    await bus?.close();
    if (genDir) rmSync(genDir, { recursive: true, force: true });
  });

  it("prints one JSON line per event, in seq order per session, with the payload summarized", async ({ skip }) => {
    tooling.skipUnlessReady(skip);
    bus = createKafkaBus({ brokers: testKafkaBrokers, clientId: "python-consumer-test", logger: silentLogger() });
    await bus.ensureTopics([{ topic, partitions: 3 }]);

    const at = Date.UTC(2026, 9, 12, 15, 50);
    const a = uniqueName("811");
    const b = uniqueName("818");
    const envelope = (sessionId: string, seq: number, payload: NonNullable<SessionEvent["payload"]>, type: string) => ({
      eventId: newEventId(at + seq),
      sessionId,
      seq,
      occurredAtMs: at + seq,
      schemaVersion: SESSION_EVENT_SCHEMA_VERSION,
      type,
      payload,
    });
    const created = (owner: string) => ({
      $case: "sessionCreated" as const,
      value: {
        owner,
        workspace: "/w",
        timezone: "Asia/Shanghai",
        kind: SessionKind.SESSION_KIND_MAIN,
        parentSessionId: "",
        inheritedSummaryFrom: "",
        inheritedSummary: "",
        locale: "",
        scope: "",
      },
    });
    const events: SessionEvent[] = [
      envelope(a, 1, created("u1"), "SessionCreated"),
      envelope(b, 1, created("u2"), "SessionCreated"),
      envelope(
        a,
        2,
        {
          $case: "messageSaved",
          value: {
            messageId: "m-a2",
            role: Role.ROLE_USER,
            content: [text("压测重试")],
            thinkingChars: 0,
            localDate: "2026-10-12",
          },
        },
        "MessageSaved",
      ),
      envelope(
        a,
        3,
        {
          $case: "messageSaved",
          value: {
            messageId: "m-a3",
            role: Role.ROLE_ASSISTANT,
            content: [
              text("好的"),
              { part: { $case: "toolCall", value: { callId: "c1", name: "shell", argumentsJson: '{"cmd":"date"}' } } },
            ],
            thinkingChars: 12,
            localDate: "2026-10-12",
          },
        },
        "MessageSaved",
      ),
      envelope(b, 2, { $case: "messageDeleted", value: { messageId: "m-b9" } }, "MessageDeleted"),
      envelope(
        a,
        4,
        {
          $case: "compactionCommitted",
          value: { generation: 1, boundaryMessageId: "m-a3", summary: "用户在压测重试逻辑" },
        },
        "CompactionCommitted",
      ),
      envelope(b, 3, { $case: "sessionDeleted", value: {} }, "SessionDeleted"),
    ];
    await bus.publish(
      topic,
      events.map((event) => ({
        key: event.sessionId,
        value: encodeSessionEvent(event),
        headers: { "pg-event-type": event.type, "pg-seq": String(event.seq) },
      })),
    );

    const group = uniqueName("py-group");
    const args = ["--bootstrap", testKafkaBrokers.join(","), "--topic", topic, "--group", group];
    const run = await runConsumer([
      ...args,
      "--gen",
      genDir ?? "",
      "--max-events",
      String(events.length),
      "--timeout",
      "30",
    ]);
    expect(run.stderr).not.toContain("skipping");
    expect(run.code).toBe(0);
    const lines = run.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as ConsumerLine);
    expect(lines).toHaveLength(events.length);
    const ofSession = (id: string) => lines.filter((line) => line.session_id === id);
    expect(ofSession(a).map((l) => [l.seq, l.type])).toEqual([
      [1, "SessionCreated"],
      [2, "MessageSaved"],
      [3, "MessageSaved"],
      [4, "CompactionCommitted"],
    ]);
    expect(ofSession(b).map((l) => [l.seq, l.type])).toEqual([
      [1, "SessionCreated"],
      [2, "MessageDeleted"],
      [3, "SessionDeleted"],
    ]);
    expect(new Set(lines.map((l) => l.event_id))).toEqual(new Set(events.map((e) => e.eventId)));
    expect(ofSession(a)[0]?.payload).toMatchObject({
      owner: "u1",
      kind: "SESSION_KIND_MAIN",
      timezone: "Asia/Shanghai",
    });
    expect(ofSession(a)[1]?.payload).toEqual({
      message_id: "m-a2",
      role: "ROLE_USER",
      parts: ["text"],
      text_chars: 4,
      tools_called: [],
      thinking_chars: 0,
      local_date: "2026-10-12",
    });
    expect(ofSession(a)[2]?.payload).toMatchObject({
      role: "ROLE_ASSISTANT",
      parts: ["text", "tool_call"],
      tools_called: ["shell"],
      thinking_chars: 12,
    });
    expect(ofSession(a)[3]?.payload).toEqual({ generation: 1, boundary_message_id: "m-a3", summary_chars: 9 });
    expect(ofSession(b)[1]?.payload).toEqual({ message_id: "m-b9" });
    expect(ofSession(a)[1]?.occurred_at_ms).toBe(at + 2);

    // The group committed its position on exit: rerun after one more event, it prints only that one.
    const next = envelope(
      a,
      5,
      {
        $case: "messageSaved",
        value: {
          messageId: "m-a5",
          role: Role.ROLE_USER,
          content: [text("继续")],
          thinkingChars: 0,
          localDate: "2026-10-13",
        },
      },
      "MessageSaved",
    );
    await bus.publish(topic, [{ key: a, value: encodeSessionEvent(next) }]);
    const again = await runConsumer([...args, "--gen", genDir ?? "", "--max-events", "1", "--timeout", "30"]);
    expect(again.code).toBe(0);
    expect(
      again.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as ConsumerLine),
    ).toMatchObject([
      { session_id: a, seq: 5, type: "MessageSaved", event_id: next.eventId, payload: { local_date: "2026-10-13" } },
    ]);
  });

  it("refuses to start without the generated modules and says how to generate them", async ({ skip }) => {
    tooling.skipUnlessReady(skip);
    const empty = mkdtempSync(join(tmpdir(), "pg-pb2-empty-"));
    try {
      const run = await runConsumer(["--topic", topic, "--gen", empty]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain("protoc -I proto --python_out=");
      expect(run.stdout).toBe("");
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
