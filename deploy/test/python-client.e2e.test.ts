// The Python client as a harness team gets it: built into a wheel offline (Debian's protoc,
// grpc_python_plugin and setuptools; no PyPI), installed into a venv outside the repo, its unit
// tests run there, then the example turn loop (deploy/examples/python-client/turn_loop.py) against
// an embedded stack. The same loop through the TypeScript client, with the same inputs and the
// same fixed clock, must get byte-identical request bodies.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHarnessClient } from "@prefix-guard/client";
import { bearerMetadata } from "@prefix-guard/grpc";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PrincipalsFixture, testToken, writePrincipalsFile } from "./principals-fixture";
import { type Stack, startStack } from "./stack";
import { type DebianTooling, installPythonTooling, repoRoot } from "./support";

const python = "/usr/bin/python3";
const example = join(repoRoot, "deploy/examples/python-client/turn_loop.py");
const unitTests = join(repoRoot, "libs/python-client/tests");
const fixedNow = Date.UTC(2026, 9, 12, 7, 50);
const turns = 8;
const contextWindow = 16_000;
const workspace = "/srv/workspaces/demo";
// Every service reads a principals file, so both clients' token options are exercised too.
const HARNESS_TOKEN = testToken("harness");
const ASSEMBLY_TOKEN = testToken("prompt-assembly");

interface LoopLine {
  kind: "turn" | "compaction";
  turn: number;
  request_id: string;
  body_sha256: string;
  body_json: string;
  checkpoint_due?: boolean;
  generation?: number;
}

function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; timeoutMs?: number },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    // Asynchronous on purpose: the stack answers from this process's event loop.
    const child = spawn(command, args, { cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${command} ${args.join(" ")} did not exit in ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once("error", reject);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function mustRun(command: string, args: readonly string[], cwd: string): Promise<string> {
  const result = await run(command, args, { cwd });
  if (result.code !== 0) {
    throw new Error(`${command} ${args.join(" ")} exited ${result.code}:\n${result.stdout}\n${result.stderr}`);
  }
  return result.stdout;
}

// The TypeScript side of the comparison: turn_loop.py's loop and inputs, through @prefix-guard/client.
const question = (turn: number) => `第${turn}轮问题：重试逻辑在压测下为什么会超时？${"问".repeat(200)}`;
const reply = (turn: number) => `第${turn}轮回答：先看连接池和重试间隔。${"好".repeat(200)}`;
const summaryOf = (count: number) => `用户做了 ${count} 轮压测排查，结论：重试间隔过短导致连接池耗尽。`;
const buildOptions = {
  model: "claude-sonnet-4-5",
  wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
  workspace,
  sections: [
    { key: "persona", text: "你是一个帮助排查压测问题的助手。" },
    { key: "environment", text: "OS: Debian 12\nShell: bash" },
  ],
  tools: [
    {
      name: "shell",
      description: "Run a shell command and return its output.",
      inputSchemaJson: '{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}',
    },
  ],
  rulesSource: { $case: "rulesContent" as const, value: { text: "# Rules\n- use pnpm\n- 回答用中文\n" } },
  contextWindow,
};

async function typescriptLoop(stack: Stack, sessionId: string): Promise<Omit<LoopLine, "body_sha256">[]> {
  const client = createHarnessClient({
    sessionEvents: stack.addresses["session-events"],
    promptAssembly: stack.addresses["prompt-assembly"],
    cacheMonitor: stack.addresses["cache-monitor"],
    deadlineMs: 10_000,
    metadata: () => bearerMetadata(HARNESS_TOKEN),
  });
  const lines: Omit<LoopLine, "body_sha256">[] = [];
  try {
    await client.createSession({ sessionId, owner: "u1", workspace });
    for (let turn = 0; turn < turns; turn++) {
      const { build } = await client.runTurn(sessionId, question(turn), buildOptions);
      await client.recordUsage(sessionId, {
        requestId: build.requestId,
        model: buildOptions.model,
        promptTokens: build.estimatedTokens,
        cachedTokens: turn === 0 ? 0 : Math.floor((build.estimatedTokens * 9) / 10),
        completionTokens: 50,
        calledAtMs: fixedNow,
      });
      const saved = await client.saveMessage({ sessionId, role: Role.ROLE_ASSISTANT, content: reply(turn) });
      lines.push({
        kind: "turn",
        turn,
        request_id: build.requestId,
        body_json: build.bodyJson,
        checkpoint_due: build.checkpointDue,
      });
      if (build.checkpointDue) {
        const compaction = await client.buildCompactionRequest(sessionId, saved.seq, buildOptions);
        const committed = await client.commitCompaction({
          sessionId,
          expectedGeneration: compaction.expectedGeneration,
          boundaryMessageId: compaction.boundaryMessageId,
          summary: summaryOf(turn + 1),
        });
        lines.push({
          kind: "compaction",
          turn,
          request_id: compaction.requestId,
          body_json: compaction.bodyJson,
          generation: committed.generation,
        });
      }
    }
  } finally {
    client.close();
  }
  return lines;
}

describe("the Python client, built offline and installed in a venv outside the repo", () => {
  let tooling: DebianTooling;
  let work: string | undefined;
  let venvPython = "";
  let stack: Stack | undefined;
  let principals: PrincipalsFixture | undefined;

  beforeAll(async () => {
    tooling = installPythonTooling();
    if (!tooling.ready) return;
    work = mkdtempSync(join(tmpdir(), "pg-pyclient-"));
    await mustRun("bash", [join(repoRoot, "libs/python-client/build.sh"), join(work, "dist")], work);
    // --without-pip saves ~10 s of ensurepip: the venv's python runs Debian's pip from the system
    // site packages, which installs into the venv. --no-index: nothing is fetched; grpcio and
    // protobuf must be satisfied by python3-grpcio and python3-protobuf.
    await mustRun(python, ["-m", "venv", "--without-pip", "--system-site-packages", join(work, "venv")], work);
    venvPython = join(work, "venv/bin/python");
    const wheels = spawnSync("bash", ["-c", `ls ${join(work, "dist")}/prefix_guard-*.whl`], { encoding: "utf8" });
    await mustRun(venvPython, ["-m", "pip", "install", "--quiet", "--no-index", wheels.stdout.trim()], work);
    principals = writePrincipalsFile([
      { name: "harness", roles: ["harness"], tokens: [HARNESS_TOKEN] },
      { name: "prompt-assembly", roles: ["peer"], tokens: [ASSEMBLY_TOKEN] },
    ]);
    stack = await startStack({
      cacheMonitor: true,
      now: () => fixedNow,
      auth: { principalsFile: principals.path, peerToken: ASSEMBLY_TOKEN },
    });
  }, 600_000);
  afterAll(async () => {
    await stack?.stop();
    principals?.remove();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("imports from the venv, with grpcio and protobuf from Debian, and passes its unit tests", async ({ skip }) => {
    tooling.skipUnlessReady(skip);
    const where = await mustRun(
      venvPython,
      [
        "-c",
        "import json, grpc, google.protobuf, prefix_guard, prefixguard; print(json.dumps([prefix_guard.__file__, prefixguard.__file__, grpc.__file__, google.protobuf.__file__]))",
      ],
      work ?? tmpdir(),
    );
    const [client, stubs, grpc, protobuf] = JSON.parse(where) as string[];
    expect(client?.startsWith(join(work ?? "", "venv"))).toBe(true);
    expect(stubs?.startsWith(join(work ?? "", "venv"))).toBe(true);
    expect(grpc?.startsWith("/usr/lib/python3/dist-packages/")).toBe(true);
    expect(protobuf?.startsWith("/usr/lib/python3/dist-packages/")).toBe(true);

    // From a directory outside the repo, so the package under test is the installed one.
    const tests = await run(venvPython, ["-m", "unittest", "discover", "-s", unitTests, "-v"], { cwd: work ?? "" });
    expect(tests.stderr).toMatch(/\nOK\n?$/);
    expect(tests.code).toBe(0);
    expect(Number(/Ran (\d+) tests/.exec(tests.stderr)?.[1])).toBeGreaterThanOrEqual(20);
  });

  it("runs the example turn loop and gets the TypeScript client's bodies byte for byte", async ({ skip }) => {
    tooling.skipUnlessReady(skip);
    if (stack === undefined) throw new Error("stack not started");
    const pySession = `py-loop-${process.pid}`;
    const loop = await run(
      venvPython,
      [
        example,
        "--session-events",
        stack.addresses["session-events"],
        "--prompt-assembly",
        stack.addresses["prompt-assembly"],
        "--cache-monitor",
        stack.addresses["cache-monitor"],
        "--token",
        HARNESS_TOKEN,
        "--session-id",
        pySession,
        "--workspace",
        workspace,
        "--turns",
        String(turns),
        "--context-window",
        String(contextWindow),
        "--called-at-ms",
        String(fixedNow),
        "--print-body",
      ],
      { cwd: work ?? "" },
    );
    expect(loop.stderr).toBe("");
    expect(loop.code).toBe(0);
    const pyLines = loop.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as LoopLine);

    // The loop did what a harness does: every turn built, a checkpoint was due and committed, and
    // the turn after the compaction starts from the summary.
    const pyTurns = pyLines.filter((line) => line.kind === "turn");
    expect(pyTurns.map((line) => line.turn)).toEqual([...Array(turns).keys()]);
    const compactions = pyLines.filter((line) => line.kind === "compaction");
    expect(compactions.length).toBeGreaterThanOrEqual(1);
    expect(compactions[0]?.generation).toBe(1);
    expect(compactions[0]?.body_json).toContain("<compaction-request>");
    const afterCompaction = pyTurns.find((line) => line.turn > (compactions[0]?.turn ?? turns));
    expect(afterCompaction?.body_json).toContain("<session-summary>");
    for (const line of pyLines) {
      expect(line.request_id).not.toBe("");
      expect(JSON.parse(line.body_json)).toMatchObject({ model: "claude-sonnet-4-5" });
    }

    const tsLines = await typescriptLoop(stack, `ts-loop-${process.pid}`);
    expect(tsLines.map((line) => [line.kind, line.turn])).toEqual(pyLines.map((line) => [line.kind, line.turn]));
    tsLines.forEach((ts, i) => {
      const py = pyLines[i];
      // Request ids hash the session id too, so they differ; the bodies must not.
      expect(py?.body_json, `${ts.kind} ${ts.turn}`).toBe(ts.body_json);
      expect(py?.checkpoint_due).toBe(ts.checkpoint_due);
      expect(py?.generation).toBe(ts.generation);
    });
  });

  it("sends the bearer token, and raises PrefixGuardError with the status's code, field and reason", async ({
    skip,
  }) => {
    tooling.skipUnlessReady(skip);
    if (stack === undefined) throw new Error("stack not started");
    const script = `
import json, sys
from prefix_guard import BuildOptions, PrefixGuardClient, PrefixGuardError, Role, WireFormat
se, pa, cm, sid, token = sys.argv[1:6]
out = []
with PrefixGuardClient(se, pa, cm, deadline_s=10.0) as anonymous:
    try:
        anonymous.get_session(sid)
    except PrefixGuardError as e:
        out.append({"code": e.code.name, "field": e.field, "reason": e.reason, "peer": e.peer, "message": e.message})
with PrefixGuardClient(se, pa, cm, deadline_s=10.0, token=lambda: token) as client:
    client.create_session("u1", "/w", session_id=sid)
    saved = client.save_message(sid, Role.ROLE_USER, "hi")
    attempts = [
        lambda: client.save_message(sid, Role.ROLE_USER, "again", expected_seq=saved.seq - 1),
        lambda: client.build_request(sid, saved.seq, BuildOptions(model="m", wire_format=WireFormat.WIRE_FORMAT_OPENAI_CHAT, context_window=0)),
        lambda: client.get_session(sid + "-missing"),
    ]
    for attempt in attempts:
        try:
            attempt()
            out.append(None)
        except PrefixGuardError as e:
            out.append({"code": e.code.name, "field": e.field, "reason": e.reason, "peer": e.peer, "message": e.message})
print(json.dumps(out))
`;
    const result = await run(
      venvPython,
      [
        "-c",
        script,
        stack.addresses["session-events"],
        stack.addresses["prompt-assembly"],
        stack.addresses["cache-monitor"],
        `py-errors-${process.pid}`,
        HARNESS_TOKEN,
      ],
      { cwd: work ?? "" },
    );
    expect(result.stderr).toBe("");
    const [unauthenticated, conflict, invalid, missing] = JSON.parse(result.stdout) as Array<
      Record<string, string | null>
    >;
    expect(unauthenticated).toMatchObject({ code: "UNAUTHENTICATED", peer: "session-events" });
    expect(conflict).toMatchObject({ code: "ABORTED", field: null, reason: "seq_mismatch", peer: "session-events" });
    expect(invalid).toMatchObject({ code: "INVALID_ARGUMENT", field: "context_window", peer: "prompt-assembly" });
    expect(invalid?.message).toContain("must be > 0");
    expect(missing).toMatchObject({ code: "NOT_FOUND", field: null, peer: "session-events" });
  });
});
