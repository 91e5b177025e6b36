// The whole turn loop a harness runs, with the TypeScript client, over real Kafka and MariaDB:
// save → build → (the model answers) → record usage → save the reply → … until a build says
// checkpoint_due → BuildCompactionRequest → (the model writes the summary) → CommitCompaction →
// the next build starts with the summary.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHarnessClient, type HarnessClient } from "@prefix-guard/client";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";

describe("the harness turn loop with a checkpoint, over Kafka and MariaDB", () => {
  let stack: Stack;
  let client: HarnessClient;
  let workspace: string;

  beforeAll(async () => {
    stack = await startStack({ store: "mariadb", transport: "kafka", cacheMonitor: true });
    client = createHarnessClient({
      sessionEvents: stack.addresses["session-events"],
      promptAssembly: stack.addresses["prompt-assembly"],
      cacheMonitor: stack.addresses["cache-monitor"],
      deadlineMs: 10_000,
    });
    workspace = mkdtempSync(join(tmpdir(), "pg-loop-"));
    writeFileSync(join(workspace, "AGENTS.md"), "# Rules\n- use pnpm\n");
  });
  afterAll(async () => {
    client?.close();
    await stack?.stop();
  });

  it("builds on the cached prefix up to the checkpoint, compacts on the same prefix, then starts from the summary", async () => {
    const sessionId = `loop-${process.pid}-${Date.now()}`;
    await client.createSession({ sessionId, owner: "u1", workspace });
    const options = {
      model: "claude-sonnet-4-5",
      wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
      workspace,
      rulesSource: { $case: "rulesFile" as const, value: { path: join(workspace, "AGENTS.md") } },
      sections: [{ key: "persona", text: "你是压测助手。" }],
      contextWindow: 64_000,
    };
    let turn = 0;
    let lastBody = "";
    let build = await client.runTurn(sessionId, `第${turn}轮问题`, options);
    // The checkpoint threshold follows the 64 k window's budget (6,000 × 0.4 = 2,400 characters).
    while (!build.build.checkpointDue) {
      expect(turn).toBeLessThan(50);
      const body = build.build.bodyJson;
      if (lastBody !== "") expect(build.build.prefix).toMatchObject({ changed: false, historyRewritten: false });
      lastBody = body;
      await client.recordUsage(sessionId, {
        requestId: build.build.requestId,
        model: options.model,
        promptTokens: build.build.estimatedTokens,
        cachedTokens: Math.floor(build.build.estimatedTokens * 0.9),
        completionTokens: 50,
        calledAtMs: Date.now(),
      });
      await client.saveMessage({
        sessionId,
        role: Role.ROLE_ASSISTANT,
        content: `第${turn}轮回答：${"好".repeat(120)}`,
      });
      turn += 1;
      build = await client.runTurn(sessionId, `第${turn}轮问题：${"问".repeat(120)}`, options);
    }
    const reply = await client.saveMessage({ sessionId, role: Role.ROLE_ASSISTANT, content: "这一轮的回答" });
    const main = await client.buildRequest(sessionId, reply.seq, options);
    const summaryCall = await client.buildCompactionRequest(sessionId, reply.seq, options);
    // The summary call sends the main request's bytes, then its instruction: the cache serves the prefix.
    let common = 0;
    while (main.bodyJson[common] === summaryCall.bodyJson[common]) common += 1;
    expect(main.bodyJson[common]).toBe("]");
    expect(summaryCall.bodyJson.slice(common)).toContain("<compaction-request>");
    expect(summaryCall.boundaryMessageId).toBe(reply.messageId);
    await client.recordUsage(sessionId, {
      requestId: summaryCall.requestId,
      model: options.model,
      promptTokens: summaryCall.estimatedTokens,
      cachedTokens: main.estimatedTokens,
      completionTokens: 200,
      calledAtMs: Date.now(),
    });

    const committed = await client.commitCompaction({
      sessionId,
      expectedGeneration: summaryCall.expectedGeneration,
      boundaryMessageId: summaryCall.boundaryMessageId,
      summary: `用户做了 ${turn + 1} 轮压测排查，结论：重试三次后成功。`,
    });
    expect(committed.generation).toBe(1);
    const next = await client.runTurn(sessionId, "继续", options);
    const messages = (JSON.parse(next.build.bodyJson) as { messages: Array<{ content: Array<{ text?: string }> }> })
      .messages;
    expect(messages[0]?.content[0]?.text).toContain("<session-summary>");
    expect(messages[0]?.content[0]?.text).toContain("重试三次后成功");
    expect(next.build.bodyJson).not.toContain("第0轮问题");
    expect(next.build.checkpointDue).toBe(false);
    expect(next.build.prefix?.cause).toContain("compaction generation 0→1");
  });
});
