// The TypeScript client as a harness team gets it: built, packed with plain `npm pack` (the package.json as written, no publishConfig rewriting), installed with npm
// into an empty project outside the repository, then deploy/examples/typescript-client/turn-loop.mjs
// run there with plain `node` (no tsx, nothing of the workspace) against a stack in this process.
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createHarnessClient, WireFormat } from "@prefix-guard/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { repoRoot } from "./support";

const run = promisify(execFile);
const clientDir = join(repoRoot, "libs/client");
const example = join(repoRoot, "deploy/examples/typescript-client/turn-loop.mjs");
const started = Date.now();
const progress = (step: string) => process.stdout.write(`[ts-client-pack ${Date.now() - started} ms] ${step}\n`);

interface TurnLine {
  turn: number;
  request_id: string;
  body_sha256: string;
  checkpoint_due: boolean;
  min_seq: number;
  projection_seq: number;
  body_has_user_text: boolean;
  rules: string;
}

describe("@prefix-guard/client installed from its tarball outside the repo", () => {
  let project: string;
  let stack: Stack;

  beforeAll(async () => {
    const packDir = mkdtempSync(join(tmpdir(), "pg-ts-pack-"));
    project = mkdtempSync(join(tmpdir(), "pg-ts-harness-"));
    progress(`build (libs/client/scripts/build.mjs), then npm pack into ${packDir}`);
    await run(process.execPath, [join(clientDir, "scripts/build.mjs")], { cwd: clientDir });
    await run("npm", ["pack", "--pack-destination", packDir, "--loglevel=error"], { cwd: clientDir });
    const tarball = join(packDir, readdirSync(packDir).find((name) => name.endsWith(".tgz")) ?? "no tarball");
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({ name: "outside-harness", private: true, type: "module" }, null, 2),
    );
    progress(`npm install ${tarball} in ${project}`);
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], {
      cwd: project,
    });
    copyFileSync(example, join(project, "turn-loop.mjs"));
    progress("start the stack (SQLite, embedded transport)");
    stack = await startStack({ cacheMonitor: true });
  });

  afterAll(async () => {
    await stack?.stop();
    if (project !== undefined) rmSync(project, { recursive: true, force: true });
  });

  it("installs with npm dependencies only, and its .d.ts type-check a caller outside the workspace", async () => {
    const installed = JSON.parse(readFileSync(join(project, "node_modules/@prefix-guard/client/package.json"), "utf8"));
    // Besides dist/, only the workspace's source condition, which no consumer sets (and src/ is not shipped).
    expect(installed.exports["."]).toEqual({
      "@prefix-guard/source": "./src/index.ts",
      types: "./dist/index.d.ts",
      import: "./dist/index.js",
    });
    expect(existsSync(join(project, "node_modules/@prefix-guard/client/src"))).toBe(false);
    expect(Object.keys(installed.dependencies).filter((name) => name.startsWith("@prefix-guard/"))).toEqual([]);
    expect(readdirSync(join(project, "node_modules/@prefix-guard"))).toEqual(["client"]);

    writeFileSync(
      join(project, "check.ts"),
      [
        'import { type BuildRequestResponse, createHarnessClient, Role, ValidationError, WireFormat } from "@prefix-guard/client";',
        'const client = createHarnessClient({ sessionEvents: "a:1", promptAssembly: "a:2", cacheMonitor: "a:3" });',
        'const saved = await client.saveMessage({ sessionId: "s", role: Role.ROLE_USER, content: "hi" });',
        "const built: BuildRequestResponse = await client.buildRequest(s(saved.seq), saved.seq, {",
        '  model: "m", wireFormat: WireFormat.WIRE_FORMAT_OPENAI_CHAT });',
        "function s(seq: number): string { return String(seq); }",
        "// If a .d.ts failed to resolve, the types would be any and this expectation unused (an error).",
        "// @ts-expect-error role must be a Role",
        'await client.saveMessage({ sessionId: "s", role: "user", content: "hi" });',
        'export const ok: boolean = built.checkpointDue && new ValidationError("f", "m").field === "f";',
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2023",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          noEmit: true,
          // Checking grpc-js's and Node's own .d.ts takes long; ours are exercised by check.ts.
          skipLibCheck: true,
          types: ["node"],
          typeRoots: [join(repoRoot, "node_modules/@types")],
        },
        files: ["check.ts"],
      }),
    );
    progress("tsc --noEmit on a caller in the outside project");
    await run(process.execPath, [join(repoRoot, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"], {
      cwd: project,
    });
  });

  it("runs the example turn loop with plain node: read-your-writes bodies, usage recorded, exit 0", async () => {
    const sessionId = `ts-pack-${process.pid}-${Date.now()}`;
    progress("node turn-loop.mjs");
    const { stdout, stderr } = await run(process.execPath, ["turn-loop.mjs", sessionId], {
      cwd: project,
      env: {
        PATH: process.env.PATH ?? "",
        PREFIX_GUARD_SESSION_EVENTS: stack.addresses["session-events"],
        PREFIX_GUARD_PROMPT_ASSEMBLY: stack.addresses["prompt-assembly"],
        PREFIX_GUARD_CACHE_MONITOR: stack.addresses["cache-monitor"],
        TURNS: "3",
      },
    });
    expect(stderr).toBe("");
    const [head, ...lines] = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(head).toEqual({ session_id: sessionId, kind: "SESSION_KIND_MAIN" });
    const turns = lines as TurnLine[];
    expect(turns.map((line) => line.turn)).toEqual([1, 2, 3]);
    for (const [index, line] of turns.entries()) {
      expect(line.body_has_user_text).toBe(true);
      expect(line.projection_seq).toBeGreaterThanOrEqual(line.min_seq);
      expect(line.body_sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(line.request_id).not.toBe("");
      expect(line.checkpoint_due).toBe(false);
      expect(line.rules).toMatch(/^DECISION_/);
      // Each turn saves the user message and the answer: user seqs 2, 4, 6 after SessionCreated (seq 1).
      expect(line.min_seq).toBe(2 + 2 * index);
    }
    expect(new Set(turns.map((line) => line.body_sha256)).size).toBe(3);

    // The same session through the workspace build of the client: every turn and answer is in it.
    const client = createHarnessClient({
      sessionEvents: stack.addresses["session-events"],
      promptAssembly: stack.addresses["prompt-assembly"],
      cacheMonitor: stack.addresses["cache-monitor"],
    });
    try {
      const session = await client.getSession(sessionId);
      expect(session.lastSeq).toBe(7);
      expect(session).not.toHaveProperty("_unknownFields");
      const body = (
        await client.buildRequest(sessionId, 7, { model: "m", wireFormat: WireFormat.WIRE_FORMAT_OPENAI_CHAT })
      ).bodyJson;
      for (const turn of [1, 2, 3]) {
        expect(body).toContain(`turn ${turn}: what changed in the last commit?`);
        expect(body).toContain(`answer ${turn}`);
      }
    } finally {
      client.close();
    }
    progress("done");
  });
});
