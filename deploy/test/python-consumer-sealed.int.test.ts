// The Python example consumer on schema 2 events over the real Kafka test broker: given a
// subscriber's token it fetches the data keys from session-events' GetDataKeys (a fake on loopback
// that checks the token) and summarizes the opened content; without one it prints the sealed events
// without content figures; an erased session's events say so; a refused token stops it (exit 5)
// without committing the event it could not read.

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerUnaryCall } from "@grpc/grpc-js";
import { createKafkaBus, type MessageBus } from "@prefix-guard/bus";
import { testKafkaBrokers, uniqueName } from "@prefix-guard/bus/testing";
import { PermissionDeniedError } from "@prefix-guard/errors";
import { type DataKey, encodeSessionEvent, newDataKey, newEventId, sealFields } from "@prefix-guard/events";
import { type GrpcServerOptions, type RunningGrpcServer, startGrpcServer } from "@prefix-guard/grpc";
import { localTestAuthenticator, openToEveryRole, streamsEndingAtOnce } from "@prefix-guard/grpc/testing";
import { silentLogger } from "@prefix-guard/logging";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import {
  type GetDataKeysRequest,
  SessionEventsService,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DebianTooling, installPythonTooling, repoRoot } from "./support";

const python = "/usr/bin/python3";
const consumerScript = join(repoRoot, "deploy/examples/python-consumer/consume_session_events.py");
const protoc = existsSync("/usr/bin/protoc") ? "/usr/bin/protoc" : "protoc";
const TOKEN = "subscriber-token-7f3a";

interface ConsumerLine {
  session_id: string;
  seq: number;
  type: string;
  payload: Record<string, unknown>;
}

function runConsumer(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [consumerScript, ...args], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`python consumer did not exit in 60 s\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, 60_000);
    child.once("error", reject);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const lines = (stdout: string) =>
  stdout
    .trim()
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as ConsumerLine);

// @prefix-guard/logging's silentLogger is a pino logger; the gRPC server takes the same shape.
const serverLogger = silentLogger() as unknown as GrpcServerOptions["logger"];

describe("python consumer opening sealed session events", () => {
  let tooling: DebianTooling;
  let genDir: string | undefined;
  let bus: MessageBus | undefined;
  let server: RunningGrpcServer | undefined;
  const keys = new Map<string, DataKey>();
  const erased = new Set<string>();
  const keyCalls: { ids: string[]; authorization: unknown }[] = [];
  // The consumer reads <prefix>session.events.v1 only (--topics), as a subscriber in a namespaced cluster would.
  const prefix = `${uniqueName("py-sealed")}.`;
  const topic = `${prefix}session.events.v1`;
  const live = uniqueName("811");
  const gone = uniqueName("818");
  const at = Date.UTC(2026, 9, 12, 15, 50);

  const envelope = (sessionId: string, seq: number, payload: NonNullable<SessionEvent["payload"]>, type: string) => ({
    eventId: newEventId(at + seq),
    sessionId,
    seq,
    occurredAtMs: at + seq,
    schemaVersion: 2,
    type,
    payload,
  });
  const savedSealed = (sessionId: string, seq: number, key: DataKey, words: string): SessionEvent =>
    envelope(
      sessionId,
      seq,
      {
        $case: "messageSaved",
        value: {
          messageId: `m-${seq}`,
          role: Role.ROLE_USER,
          content: [],
          thinkingChars: 3,
          localDate: "2026-10-12",
          sealed: sealFields(key, sessionId, seq, {
            content: [
              { part: { $case: "text", value: { text: words } } },
              { part: { $case: "toolCall", value: { callId: "c1", name: "shell", argumentsJson: "{}" } } },
            ],
          }),
        },
      },
      "MessageSaved",
    );

  beforeAll(async () => {
    tooling = installPythonTooling();
    if (!tooling.ready) return;
    genDir = mkdtempSync(join(tmpdir(), "pg-pb2-sealed-"));
    const generated = spawnSync(
      protoc,
      [
        "-I",
        "proto",
        `--python_out=${genDir}`,
        "proto/prefixguard/common/v1/common.proto",
        "proto/prefixguard/events/v1/session_events.proto",
        "proto/prefixguard/sessionevents/v1/session_events_service.proto",
      ],
      { cwd: repoRoot, encoding: "utf8" },
    );
    if (generated.status !== 0) throw new Error(`protoc failed: ${generated.stderr}`);
    const notUsed = async () => {
      throw new Error("not used by this test");
    };
    server = await startGrpcServer({
      host: "127.0.0.1",
      port: 0,
      logger: serverLogger,
      authenticator: localTestAuthenticator(),
      services: [
        {
          name: "prefixguard.sessionevents.v1.SessionEvents",
          definition: SessionEventsService,
          access: openToEveryRole(SessionEventsService),
          streams: streamsEndingAtOnce(SessionEventsService),
          methods: {
            getDataKeys: async (request: GetDataKeysRequest, call: ServerUnaryCall<never, never>) => {
              const authorization = call.metadata.get("authorization")[0];
              keyCalls.push({ ids: request.sessionIds, authorization });
              if (authorization !== `Bearer ${TOKEN}`) throw new PermissionDeniedError("not a subscriber");
              return {
                keys: request.sessionIds.map((sessionId) => {
                  const key = keys.get(sessionId);
                  return key === undefined
                    ? { sessionId, keyId: "", key: Buffer.alloc(0), erased: erased.has(sessionId) }
                    : { sessionId, keyId: key.keyId, key: Buffer.from(key.key), erased: false };
                }),
              };
            },
            createSession: notUsed,
            saveMessage: notUsed,
            deleteMessage: notUsed,
            commitCompaction: notUsed,
            deleteSession: notUsed,
            promoteSideTask: notUsed,
            readEvents: notUsed,
            getSession: notUsed,
            listMessages: notUsed,
          },
        },
      ],
    });
  }, 600_000);
  afterAll(async () => {
    await bus?.close();
    await server?.shutdown();
    if (genDir) rmSync(genDir, { recursive: true, force: true });
  });

  it("opens content with a subscriber's keys, marks erased sessions, and prints no content without a token", async ({
    skip,
  }) => {
    tooling.skipUnlessReady(skip);
    bus = createKafkaBus({ brokers: testKafkaBrokers, clientId: "python-sealed-test", logger: silentLogger() });
    await bus.ensureTopics([{ topic, partitions: 1 }]);
    const liveKey = newDataKey();
    keys.set(live, liveKey);
    const goneKey = newDataKey();
    erased.add(gone);
    const events: SessionEvent[] = [
      envelope(
        live,
        1,
        {
          $case: "sessionCreated",
          value: {
            owner: "u1",
            workspace: "/w",
            timezone: "Asia/Shanghai",
            kind: SessionKind.SESSION_KIND_MAIN,
            parentSessionId: "",
            inheritedSummaryFrom: "",
            inheritedSummary: "",
            locale: "",
            scope: "",
            sealed: sealFields(liveKey, live, 1, { inheritedSummary: "" }),
          },
        },
        "SessionCreated",
      ),
      savedSealed(live, 2, liveKey, "压测重试"),
      envelope(
        live,
        3,
        {
          $case: "compactionCommitted",
          value: {
            generation: 1,
            boundaryMessageId: "m-2",
            summary: "",
            sealed: sealFields(liveKey, live, 3, { summary: "用户在压测重试逻辑" }),
          },
        },
        "CompactionCommitted",
      ),
      envelope(
        gone,
        1,
        {
          $case: "sessionCreated",
          value: {
            owner: "u2",
            workspace: "/w",
            timezone: "Asia/Shanghai",
            kind: SessionKind.SESSION_KIND_MAIN,
            parentSessionId: "",
            inheritedSummaryFrom: "",
            inheritedSummary: "",
            locale: "",
            scope: "",
          },
        },
        "SessionCreated",
      ),
      savedSealed(gone, 2, goneKey, "已经删除的内容"),
      envelope(gone, 3, { $case: "sessionDeleted", value: {} }, "SessionDeleted"),
      savedSealed(live, 4, liveKey, "继续"),
    ];
    await bus.publish(
      topic,
      events.map((event) => ({ key: event.sessionId, value: encodeSessionEvent(event) })),
    );
    const base = [
      "--bootstrap",
      testKafkaBrokers.join(","),
      "--topic-prefix",
      prefix,
      "--topics",
      "session.events.v1",
      "--gen",
      genDir ?? "",
      "--timeout",
      "30",
    ];
    const sessionEvents = ["--session-events", server?.address ?? ""];

    const opened = await runConsumer(
      [...base, ...sessionEvents, "--group", uniqueName("py-sealed"), "--max-events", String(events.length)],
      { PG_TOKEN: TOKEN },
    );
    expect(opened.stderr).toBe("");
    expect(opened.code).toBe(0);
    const out = lines(opened.stdout);
    expect(out.map((line) => [line.session_id, line.seq, line.type])).toEqual(
      events.map((event) => [event.sessionId, event.seq, event.type]),
    );
    expect(out[1]?.payload).toEqual({
      message_id: "m-2",
      role: "ROLE_USER",
      parts: ["text", "tool_call"],
      text_chars: 4,
      tools_called: ["shell"],
      thinking_chars: 3,
      local_date: "2026-10-12",
      sealed: true,
    });
    expect(out[2]?.payload).toEqual({ generation: 1, boundary_message_id: "m-2", summary_chars: 9, sealed: true });
    expect(out[4]?.payload).toMatchObject({ parts: [], text_chars: 0, sealed: true, erased: true });
    expect(out[6]?.payload).toMatchObject({ text_chars: 2 });
    // The token on every call; the live session's key is fetched once and then cached.
    expect(new Set(keyCalls.map((call) => call.authorization))).toEqual(new Set([`Bearer ${TOKEN}`]));
    expect(keyCalls.filter((call) => call.ids.includes(live))).toHaveLength(1);

    const sealedOnly = await runConsumer([...base, "--group", uniqueName("py-sealed"), "--max-events", "3"], {
      PG_TOKEN: "",
    });
    expect(sealedOnly.code).toBe(0);
    const plain = lines(sealedOnly.stdout);
    expect(plain[1]?.payload).toEqual({
      sealed: true,
      message_id: "m-2",
      role: "ROLE_USER",
      thinking_chars: 3,
      local_date: "2026-10-12",
    });
    expect(plain[2]?.payload).toEqual({ sealed: true, generation: 1, boundary_message_id: "m-2" });
  });

  it("stops with exit 5 when the token is refused, and rereads that event on the next run", async ({ skip }) => {
    tooling.skipUnlessReady(skip);
    const group = uniqueName("py-sealed-refused");
    const base = [
      "--bootstrap",
      testKafkaBrokers.join(","),
      "--topic-prefix",
      prefix,
      "--topics",
      "session.events.v1",
      "--gen",
      genDir ?? "",
      "--timeout",
      "30",
    ];
    const sessionEvents = ["--session-events", server?.address ?? ""];
    const refused = await runConsumer([...base, ...sessionEvents, "--group", group, "--max-events", "7"], {
      PG_TOKEN: "not-a-subscriber",
    });
    expect(refused.code).toBe(5);
    expect(refused.stderr).toContain("PERMISSION_DENIED");
    expect(refused.stderr).not.toContain("not-a-subscriber");
    expect(lines(refused.stdout)).toEqual([]);
    const again = await runConsumer([...base, ...sessionEvents, "--group", group, "--max-events", "1"], {
      PG_TOKEN: TOKEN,
    });
    expect(again.code).toBe(0);
    expect(lines(again.stdout).map((line) => [line.seq, line.type])).toEqual([[1, "SessionCreated"]]);
  });
});
