// Peer authentication between services: with every service reading a principals file,
// prompt-assembly's own calls (ReadEvents and Resolve) must carry PEER_AUTH_TOKEN, the token of a
// principal with the peer role. A Resolve sent without it is refused, and the build would fall back
// to the raw rules.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHarnessClient, type HarnessClient } from "@prefix-guard/client";
import { bearerMetadata } from "@prefix-guard/grpc";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type PrincipalsFixture, testToken, writePrincipalsFile } from "./principals-fixture";
import { type Stack, startStack } from "./stack";

const HARNESS_TOKEN = testToken("harness");
const ASSEMBLY_TOKEN = testToken("prompt-assembly");

describe("peer tokens on prompt-assembly's calls to session-events and rules-snapshot", () => {
  let principals: PrincipalsFixture;
  let stack: Stack | undefined;
  let client: HarnessClient | undefined;
  beforeAll(() => {
    principals = writePrincipalsFile([
      { name: "harness", roles: ["harness"], tokens: [HARNESS_TOKEN] },
      { name: "prompt-assembly", roles: ["peer"], tokens: [ASSEMBLY_TOKEN] },
    ]);
  });
  afterAll(() => principals.remove());
  afterEach(async () => {
    client?.close();
    await stack?.stop();
  });

  async function buildOnce(peerToken: string) {
    stack = await startStack({ auth: { principalsFile: principals.path, peerToken } });
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
    const outcome = await buildOnce(testToken("not-the-assembly-token")).then(
      (turn) => turn.build.rulesDecision,
      (error: unknown) => (error as Error).name,
    );
    expect(outcome).not.toBe(Decision.DECISION_PINNED);
  });

  it("does not pin with a valid token of a principal without the peer role (Resolve is a peer's)", async () => {
    const outcome = await buildOnce(HARNESS_TOKEN).then(
      (turn) => turn.build.rulesDecision,
      (error: unknown) => (error as Error).name,
    );
    expect(outcome).not.toBe(Decision.DECISION_PINNED);
  });
});
