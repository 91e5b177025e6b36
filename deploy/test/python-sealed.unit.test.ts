// The Python client's open_sealed (libs/python-client/src/prefix_guard/sealed.py) on events sealed by
// TypeScript (@prefix-guard/events sealFields, as session-events writes them): the same key, nonce
// layout and AAD on both sides, so a Python subscriber reads what session-events sealed, and refuses
// what was changed. The _pb2 modules are generated into a temp dir with Debian's protoc, as the
// wheel's build does.

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeSessionEvent, newDataKey, sealFields } from "@prefix-guard/events";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DebianTooling, installPythonTooling, repoRoot } from "./support";

const python = "/usr/bin/python3";
const protoc = existsSync("/usr/bin/protoc") ? "/usr/bin/protoc" : "protoc";
const pythonClientSrc = join(repoRoot, "libs/python-client/src");

/** Opens every fixture event with prefix_guard.open_sealed and prints what came out, one JSON line each. */
const OPEN_FIXTURE = `
import base64, json, sys
from google.protobuf.json_format import MessageToDict
from prefix_guard import SessionEvent, SealedContentError, is_sealed, open_sealed

fixture = json.load(open(sys.argv[1]))
key = base64.b64decode(fixture["key"])
for encoded in fixture["events"]:
    event = SessionEvent.FromString(base64.b64decode(encoded))
    line = {"seq": event.seq, "case": event.WhichOneof("payload"), "sealed_before": is_sealed(event)}
    try:
        opened = open_sealed(event, key, fixture["key_id"])
    except SealedContentError as error:
        line["error"] = {"reason": error.reason, "field": error.field, "message": error.message}
    else:
        payload = getattr(opened, line["case"])
        line["sealed_after"] = payload.HasField("sealed")
        if line["case"] == "message_saved":
            line["content"] = [MessageToDict(part) for part in payload.content]
        elif line["case"] == "compaction_committed":
            line["summary"] = payload.summary
        else:
            line["inherited_summary"] = payload.inherited_summary
    print(json.dumps(line, ensure_ascii=False))
erased = open_sealed(SessionEvent.FromString(base64.b64decode(fixture["events"][1])), b"", fixture["key_id"])
print(json.dumps({"erased_parts": len(erased.message_saved.content)}))
`;

describe("prefix_guard.open_sealed (Python) on TypeScript-sealed events", () => {
  let tooling: DebianTooling;
  let work: string | undefined;
  let genDir = "";

  beforeAll(() => {
    tooling = installPythonTooling();
    if (!tooling.ready) return;
    work = mkdtempSync(join(tmpdir(), "pg-py-sealed-"));
    genDir = join(work, "gen");
    const protos = spawnSync("find", ["prefixguard", "-name", "*.proto"], {
      cwd: join(repoRoot, "proto"),
      encoding: "utf8",
    })
      .stdout.trim()
      .split("\n")
      .sort();
    spawnSync("mkdir", ["-p", genDir]);
    const generated = spawnSync(
      protoc,
      [
        "-I",
        "proto",
        `--python_out=${genDir}`,
        `--grpc_python_out=${genDir}`,
        "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
        ...protos.map((proto) => `proto/${proto}`),
      ],
      { cwd: repoRoot, encoding: "utf8" },
    );
    if (generated.status !== 0) throw new Error(`protoc failed: ${generated.stderr}`);
  }, 600_000);
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const pythonEnv = () => ({
    ...process.env,
    PYTHONPATH: `${genDir}:${pythonClientSrc}`,
    PYTHONDONTWRITEBYTECODE: "1",
  });

  it("opens MessageSaved, CompactionCommitted and SessionCreated, and refuses a changed seal", ({ skip }) => {
    tooling.skipUnlessReady(skip);
    const key = newDataKey();
    const sessionId = "811-会话";
    const envelope = (seq: number, payload: NonNullable<SessionEvent["payload"]>, type: string): SessionEvent => ({
      eventId: `e-${seq}`,
      sessionId,
      seq,
      occurredAtMs: 1_760_284_200_000 + seq,
      schemaVersion: 2,
      type,
      payload,
    });
    const content = [
      { part: { $case: "text" as const, value: { text: "压测重试 🚀" } } },
      { part: { $case: "image" as const, value: { mediaType: "image/png", url: "https://example.test/a.png" } } },
      { part: { $case: "toolCall" as const, value: { callId: "c1", name: "shell", argumentsJson: '{"cmd":"date"}' } } },
      { part: { $case: "toolResult" as const, value: { callId: "c1", text: "2026-10-12", isError: true } } },
    ];
    const events: SessionEvent[] = [
      envelope(
        1,
        {
          $case: "sessionCreated",
          value: {
            owner: "u1",
            workspace: "/w",
            timezone: "Asia/Shanghai",
            kind: SessionKind.SESSION_KIND_MAIN,
            parentSessionId: "",
            inheritedSummaryFrom: "prev",
            inheritedSummary: "",
            locale: "",
            scope: "",
            sealed: sealFields(key, sessionId, 1, { inheritedSummary: "上次聊到压测" }),
          },
        },
        "SessionCreated",
      ),
      envelope(
        2,
        {
          $case: "messageSaved",
          value: {
            messageId: "m2",
            role: Role.ROLE_ASSISTANT,
            content: [],
            thinkingChars: 0,
            localDate: "2026-10-12",
            sealed: sealFields(key, sessionId, 2, { content }),
          },
        },
        "MessageSaved",
      ),
      envelope(
        3,
        {
          $case: "compactionCommitted",
          value: {
            generation: 1,
            boundaryMessageId: "m2",
            summary: "",
            sealed: sealFields(key, sessionId, 3, { summary: "用户在压测重试逻辑" }),
          },
        },
        "CompactionCommitted",
      ),
    ];
    const tampered = structuredClone(events[1] as SessionEvent);
    if (tampered.payload?.$case !== "messageSaved" || tampered.payload.value.sealed === undefined) throw new Error();
    tampered.seq = 4; // the seal of seq 2 moved to another event: the AAD no longer matches
    const fixture = join(work ?? "", "fixture.json");
    writeFileSync(
      fixture,
      JSON.stringify({
        key: Buffer.from(key.key).toString("base64"),
        key_id: key.keyId,
        events: [...events, tampered].map((event) => Buffer.from(encodeSessionEvent(event)).toString("base64")),
      }),
    );

    const run = spawnSync(python, ["-c", OPEN_FIXTURE, fixture], { encoding: "utf8", env: pythonEnv() });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    const lines = run.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toEqual({
      seq: 1,
      case: "session_created",
      sealed_before: true,
      sealed_after: false,
      inherited_summary: "上次聊到压测",
    });
    expect(lines[1]).toEqual({
      seq: 2,
      case: "message_saved",
      sealed_before: true,
      sealed_after: false,
      content: [
        { text: { text: "压测重试 🚀" } },
        { image: { mediaType: "image/png", url: "https://example.test/a.png" } },
        { toolCall: { callId: "c1", name: "shell", argumentsJson: '{"cmd":"date"}' } },
        { toolResult: { callId: "c1", text: "2026-10-12", isError: true } },
      ],
    });
    expect(lines[2]).toMatchObject({ seq: 3, summary: "用户在压测重试逻辑", sealed_after: false });
    expect(lines[3]).toEqual({
      seq: 4,
      case: "message_saved",
      sealed_before: true,
      error: {
        reason: "sealed_content_unreadable",
        field: "sealed",
        message: `sealed content of ${sessionId} seq 4 cannot be opened: authentication failed`,
      },
    });
    expect(lines[4]).toEqual({ erased_parts: 0 });
  });

  it("passes the Python client's own sealed-event tests (libs/python-client/tests/test_sealed.py)", ({ skip }) => {
    tooling.skipUnlessReady(skip);
    const run = spawnSync(python, ["-m", "unittest", "-v", "test_sealed"], {
      cwd: join(repoRoot, "libs/python-client/tests"),
      encoding: "utf8",
      env: pythonEnv(),
    });
    expect(run.stderr).toMatch(/\nOK\n?$/);
    expect(run.status).toBe(0);
  });
});
