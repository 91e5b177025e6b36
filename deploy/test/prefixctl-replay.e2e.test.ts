// What an operator does shows up as such in the attribution of the next build:
// - `prefixctl replay` (projection rebuild) is not monitor amnesia: the next build is compared with
//   the session's previous prefix (not called a first build), and a provider miss right after it is
//   blamed on the provider, never on "prompt-assembly lost the session's state";
// - `prefixctl snapshot refresh --reason R` re-pins the workspace rules, and the collapse that
//   follows names the operator's refresh and R.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { callUnary } from "@prefix-guard/grpc";
import { type BuildRequestResponse, WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { mainSessionRequest, priceBuild, runPrefixctl, saveAndBuild } from "./support";

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

  const turn = (sessionId: string, text: string, rulesDir = workspace): Promise<BuildRequestResponse> =>
    saveAndBuild(stack, sessionId, text, {
      sections: [{ key: "persona", text: "persona text" }],
      tools: [],
      wireFormat: WireFormat.WIRE_FORMAT_OPENAI_CHAT,
      model: "gpt-4o",
      workspace: rulesDir,
      rulesSource: { $case: "rulesFile", value: { path: join(rulesDir, "AGENTS.md") } },
      embed: false,
      locale: "en",
    });

  /** A 6k-token call of the build, `cachedTokens` of it from the cache, once cache-monitor holds the build's fingerprint. */
  const recordUsage = (sessionId: string, built: BuildRequestResponse, cachedTokens: number) =>
    priceBuild(stack, sessionId, built.requestId, {
      model: "gpt-4o",
      promptTokens: 6_000,
      cachedTokens,
      completionTokens: 50,
      cacheCreationTokens: 0,
      provider: "openai",
      calledAtMs: Date.now(),
    });

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
    const answer = await recordUsage(sessionId, next, 0);
    expect(answer.collapse?.cause).toContain("operator refresh (reason: INC-42 rules fixed)");
    const collapses = await prefixctl(["collapses", "--session", sessionId, "--wide"]);
    expect(collapses.code).toBe(0);
    expect(collapses.stdout).toContain("INC-42 rules fixed");
    // The build after it retains the new snapshot: nothing more to explain.
    expect((await turn(sessionId, "one more", rulesDir)).rulesDecision).toBe(Decision.DECISION_RETAINED);
  });
});
