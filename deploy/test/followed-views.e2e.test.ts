// FollowEvents end to end (session-events and prompt-assembly over gRPC, SQLite, embedded bus): a
// message saved after a build reaches the build's held view before any build asks for it, sealed
// content opened, so the build after a SaveMessage reads nothing. With FOLLOW_SESSION_EVENTS off
// the held view stays where its last build left it (the control: nothing else extends it).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually, uniqueName } from "@prefix-guard/bus/testing";
import { callUnary } from "@prefix-guard/grpc";
import { type BuildRequestRequest, WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { afterEach, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { counterTotal, mainSessionRequest, userTextMessage } from "./support";

const CALL = { deadlineMs: 10_000 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function buildOf(sessionId: string, minSeq: number, workspace: string): BuildRequestRequest {
  return {
    sessionId,
    minSeq,
    sections: [{ key: "persona", text: "你是助手" }],
    tools: [],
    wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
    model: "claude-sonnet-4-5",
    workspace,
    rulesSource: { $case: "rulesContent", value: { text: "" } },
    embed: false,
    locale: "zh-CN",
  };
}

function buildAt(stack: Stack, sessionId: string, minSeq: number, workspace: string) {
  return callUnary(stack.assembly(), stack.assembly().buildRequest, buildOf(sessionId, minSeq, workspace), CALL);
}

async function savedAfterBuild(stack: Stack, sessionId: string) {
  const workspace = mkdtempSync(join(tmpdir(), "pg-follow-"));
  await callUnary(stack.sessions, stack.sessions.createSession, mainSessionRequest(sessionId, workspace), CALL);
  const first = await callUnary(stack.sessions, stack.sessions.saveMessage, userTextMessage(sessionId, "第一条"), CALL);
  await buildAt(stack, sessionId, first.seq, workspace);
  expect(stack.promptAssembly().views.peek(sessionId)?.lastSeq).toBe(first.seq);
  const second = await callUnary(
    stack.sessions,
    stack.sessions.saveMessage,
    userTextMessage(sessionId, "第二条：跟随"),
    CALL,
  );
  return { workspace, first, second };
}

describe("prompt-assembly follows session-events' saved messages (FollowEvents)", () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it("extends the held view with a message saved after the build, before any build asks, sealed content opened", async () => {
    stack = await startStack();
    const running = stack;
    const sessionId = uniqueName("follow");
    // The stream opens as prompt-assembly starts; a save before it connects is simply not followed.
    await eventually(
      async () => {
        const probe = uniqueName("probe");
        const { second } = await savedAfterBuild(running, probe);
        return eventually(() => running.promptAssembly().views.peek(probe)?.lastSeq === second.seq, {
          timeoutMs: 2_000,
        });
      },
      { timeoutMs: 20_000, what: "the FollowEvents stream" },
    );
    const { workspace, second } = await savedAfterBuild(running, sessionId);
    await eventually(() => running.promptAssembly().views.peek(sessionId)?.lastSeq === second.seq, {
      timeoutMs: 5_000,
      what: "the followed message in the held view",
    });
    const held = running.promptAssembly().views.peek(sessionId);
    expect(held?.messages.at(-1)?.content).toEqual([{ type: "text", text: "第二条：跟随" }]);
    const extended = counterTotal(
      await running.promptAssembly().metrics.metrics(),
      "prefixguard_followed_events_total",
      { outcome: "extended" },
    );
    expect(extended).toBeGreaterThanOrEqual(2);
    // The build at the new seq is served from the extended view: its body carries the new message.
    expect((await buildAt(running, sessionId, second.seq, workspace)).bodyJson).toContain("第二条：跟随");
  }, 60_000);

  it("with FOLLOW_SESSION_EVENTS=false the held view stays behind until a build catches it up", async () => {
    stack = await startStack({ serviceEnv: { "prompt-assembly": { FOLLOW_SESSION_EVENTS: "false" } } });
    const sessionId = uniqueName("nofollow");
    const { workspace, first, second } = await savedAfterBuild(stack, sessionId);
    await sleep(1_000);
    expect(stack.promptAssembly().views.peek(sessionId)?.lastSeq).toBe(first.seq);
    expect((await buildAt(stack, sessionId, second.seq, workspace)).bodyJson).toContain("第二条：跟随");
    expect(stack.promptAssembly().views.peek(sessionId)?.lastSeq).toBe(second.seq);
  }, 60_000);
});
