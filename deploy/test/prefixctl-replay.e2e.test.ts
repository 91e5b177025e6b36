// What an operator does shows up as such in the attribution of the next build:
// - `prefixctl replay` (projection rebuild) is not monitor amnesia: the next build is compared with
//   the session's previous prefix (not called a first build), and a provider miss right after it is
//   blamed on the provider, never on "prompt-assembly lost the session's state";
// - `prefixctl snapshot refresh --reason R` re-pins the workspace rules, and the collapse that
//   follows names the operator's refresh and R.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "@prefix-guard/bus/testing";
import { callUnary } from "@prefix-guard/grpc";
import { type BuildRequestResponse, WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { mainSessionRequest, runPrefixctl } from "./support";

const deadline = { deadlineMs: 10_000 };

describe("prefixctl operations, then the next build", () => {
  let stack: Stack;
  let workspace: string;
  beforeAll(async () => {
    stack = await startStack({ cacheMonitor: true });
    workspace = mkdtempSync(join(tmpdir(), "pg-replay-ws-"));
    writeFileSync(join(workspace, "AGENTS.md"), "# Rules\n- use pnpm\n");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const prefixctl = (argv: string[]) =>
    runPrefixctl(argv, {
      PREFIXCTL_CACHE_MONITOR: stack.addresses["cache-monitor"],
      PREFIXCTL_PROMPT_ASSEMBLY: stack.addresses["prompt-assembly"],
      PREFIXCTL_RULES_SNAPSHOT: stack.addresses["rules-snapshot"],
    });

  /** Until cache-monitor holds the build's fingerprint, so a usage's verdict rests on it. */
  async function fingerprintAtMonitor(sessionId: string, requestId: string): Promise<void> {
    const monitor = stack.monitor;
    if (monitor === undefined) throw new Error("cache-monitor not started");
    await eventually(
      async () => {
        const traced = await callUnary(monitor, monitor.traceSession, { sessionId, limit: 0 }, deadline);
        return traced.builds.some((b) => b.requestId === requestId && b.sectionHashes.length > 0) || undefined;
      },
      { what: `the fingerprint of build ${requestId} at cache-monitor` },
    );
  }

  async function turn(sessionId: string, text: string, rulesDir = workspace): Promise<BuildRequestResponse> {
    const saved = await callUnary(
      stack.sessions,
      stack.sessions.saveMessage,
      { sessionId, role: Role.ROLE_USER, content: [{ part: { $case: "text", value: { text } } }], thinkingText: "" },
      deadline,
    );
    const assembly = stack.assembly();
    return callUnary(
      assembly,
      assembly.buildRequest,
      {
        sessionId,
        minSeq: saved.seq,
        sections: [{ key: "persona", text: "persona text" }],
        tools: [],
        wireFormat: WireFormat.WIRE_FORMAT_OPENAI_CHAT,
        model: "gpt-4o",
        workspace: rulesDir,
        rulesSource: { $case: "rulesFile", value: { path: join(rulesDir, "AGENTS.md") } },
        embed: false,
        locale: "en",
      },
      deadline,
    );
  }

  async function recordUsage(sessionId: string, built: BuildRequestResponse, cachedTokens: number) {
    const monitor = stack.monitor;
    if (monitor === undefined) throw new Error("cache-monitor not started");
    return callUnary(
      monitor,
      monitor.recordUsage,
      {
        sessionId,
        usage: {
          requestId: built.requestId,
          model: "gpt-4o",
          promptTokens: 6_000,
          cachedTokens,
          completionTokens: 50,
          cacheCreationTokens: 0,
          provider: "openai",
          calledAtMs: Date.now(),
        },
        // Built just before: the default key and no unbuilt.
        idempotencyKey: "",
        providerResponseId: "",
        unbuilt: false,
      },
      deadline,
    );
  }

  it("compares the next build with the previous prefix and blames a miss on the provider", async () => {
    const sessionId = `replay-${Date.now()}`;
    await callUnary(stack.sessions, stack.sessions.createSession, mainSessionRequest(sessionId, workspace), deadline);
    for (let i = 0; i < 5; i += 1)
      await recordUsage(sessionId, await turn(sessionId, `turn ${i}`), i === 0 ? 0 : 5_800);

    const replay = await prefixctl(["replay", sessionId]);
    expect(replay.stderr).toBe("");
    expect(replay.code).toBe(0);
    expect(replay.stdout).toContain(`Rebuilt the prompt-assembly projection of session ${sessionId}`);

    const next = await turn(sessionId, "after the replay");
    expect(next.prefix).toMatchObject({ firstBuild: false, changed: false });
    await fingerprintAtMonitor(sessionId, next.requestId);
    const answer = await recordUsage(sessionId, next, 0);
    expect(answer.collapse).toBeDefined();
    expect(answer.collapse?.cause).toMatch(/^provider-side cache miss with our prefix unchanged/);
    expect(answer.collapse?.attribution).toBe("provider_only");

    const trace = await prefixctl(["trace", sessionId, "--wide"]);
    expect(trace.code).toBe(0);
    const lines = trace.stdout.split("\n");
    expect(lines.filter((line) => /^\s*\d+\s.*\bfirst\b/.test(line))).toHaveLength(1);
  });

  it("names an operator's snapshot refresh and its reason as the cause of the collapse that follows", async () => {
    const sessionId = `refresh-${Date.now()}`;
    const rulesDir = mkdtempSync(join(tmpdir(), "pg-refresh-ws-"));
    writeFileSync(join(rulesDir, "AGENTS.md"), "# Rules\n- use pnpm\n");
    await callUnary(stack.sessions, stack.sessions.createSession, mainSessionRequest(sessionId, rulesDir), deadline);
    for (let i = 0; i < 4; i += 1)
      await recordUsage(sessionId, await turn(sessionId, `turn ${i}`, rulesDir), i === 0 ? 0 : 5_800);

    writeFileSync(join(rulesDir, "AGENTS.md"), "# Rules\n- use pnpm\n- never force-push\n");
    const refresh = await prefixctl(["snapshot", "refresh", sessionId, "--reason", "INC-42 rules fixed"]);
    expect(refresh.code).toBe(0);

    const next = await turn(sessionId, "after the refresh", rulesDir);
    expect(next.rulesDecision).toBe(Decision.DECISION_REPINNED_OPERATOR_REFRESH);
    expect(next.prefix?.cause).toBe(
      "new workspace-rules snapshot pinned after an operator refresh (reason: INC-42 rules fixed)",
    );
    await fingerprintAtMonitor(sessionId, next.requestId);
    const answer = await recordUsage(sessionId, next, 0);
    expect(answer.collapse?.cause).toContain("operator refresh (reason: INC-42 rules fixed)");
    const collapses = await prefixctl(["collapses", "--session", sessionId, "--wide"]);
    expect(collapses.code).toBe(0);
    expect(collapses.stdout).toContain("INC-42 rules fixed");
    // The build after it retains the new snapshot: nothing more to explain.
    expect((await turn(sessionId, "one more", rulesDir)).rulesDecision).toBe(Decision.DECISION_RETAINED);
  });
});
