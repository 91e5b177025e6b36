// Peer authentication between services: with bearer tokens required on session-events and
// rules-snapshot, prompt-assembly's own calls (ReadEvents and Resolve) must carry PEER_AUTH_TOKEN.
// A Resolve sent without it is refused, and the build would fall back to the raw rules.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHarnessClient, type HarnessClient } from "@prefix-guard/client";
import { bearerMetadata } from "@prefix-guard/grpc";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterEach, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";

const HARNESS_TOKEN = "harness-token-0123456789";
const ASSEMBLY_TOKEN = "assembly-token-abcdefghij";
const guarded = { GRPC_AUTH_TOKENS: `harness:${HARNESS_TOKEN},prompt-assembly:${ASSEMBLY_TOKEN}` };

describe("peer tokens on prompt-assembly's calls to session-events and rules-snapshot", () => {
  let stack: Stack | undefined;
  let client: HarnessClient | undefined;
  afterEach(async () => {
    client?.close();
    await stack?.stop();
  });

  async function buildOnce(peerToken: string) {
    stack = await startStack({
      serviceEnv: {
        "session-events": guarded,
        "rules-snapshot": guarded,
        "prompt-assembly": { PEER_AUTH_TOKEN: peerToken },
      },
    });
    client = createHarnessClient({
      sessionEvents: stack.addresses["session-events"],
      promptAssembly: stack.addresses["prompt-assembly"],
      cacheMonitor: stack.addresses["prompt-assembly"],
      deadlineMs: 10_000,
      metadata: () => bearerMetadata(HARNESS_TOKEN),
    });
    const workspace = mkdtempSync(join(tmpdir(), "pg-peer-auth-"));
    writeFileSync(join(workspace, "AGENTS.md"), "# Rules\n- use pnpm\n");
    await client.createSession({ sessionId: "peer-auth", owner: "u1", workspace });
    return client.runTurn("peer-auth", "你好", {
      model: "claude-sonnet-4-5",
      wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
      workspace,
      rulesSource: { $case: "rulesFile", value: { path: join(workspace, "AGENTS.md") } },
    });
  }

  it("pins the rules through an authenticated Resolve when PEER_AUTH_TOKEN is accepted", async () => {
    const turn = await buildOnce(ASSEMBLY_TOKEN);
    expect(turn.build.rulesDecision).toBe(Decision.DECISION_PINNED);
    expect(turn.build.bodyJson).toContain("use pnpm");
  });

  it("does not pin with a token the peers refuse (the control: the token is what made the difference)", async () => {
    const outcome = await buildOnce("not-the-assembly-token-000").then(
      (turn) => turn.build.rulesDecision,
      (error: unknown) => (error as Error).name,
    );
    expect(outcome).not.toBe(Decision.DECISION_PINNED);
  });
});
