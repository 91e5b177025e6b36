// The harness forwards the provider's usage as it came: each build names the `provider` its body's
// dialect answers with (usage_provider), and RecordUsage's raw intake reads that dialect's fields.
// For all four wire formats, over gRPC with the TypeScript client.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHarnessClient, type HarnessClient } from "@prefix-guard/client";
import { callUnary } from "@prefix-guard/grpc";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";

/** What each provider answers, as its documentation shows: 2,000 prompt tokens, 1,536 read from cache. */
const USAGE_BY_PROVIDER: Readonly<Record<string, string>> = {
  openai_chat: JSON.stringify({
    prompt_tokens: 2000,
    completion_tokens: 50,
    prompt_tokens_details: { cached_tokens: 1536 },
  }),
  openai_responses: JSON.stringify({
    input_tokens: 2000,
    input_tokens_details: { cached_tokens: 1536 },
    output_tokens: 50,
  }),
  anthropic: JSON.stringify({
    input_tokens: 464,
    cache_read_input_tokens: 1536,
    cache_creation_input_tokens: 0,
    output_tokens: 50,
  }),
  // Converse's TokenUsage: inputTokens leaves out what was read from or written to the cache.
  bedrock_converse: JSON.stringify({
    inputTokens: 464,
    outputTokens: 50,
    totalTokens: 2050,
    cacheReadInputTokens: 1536,
    cacheWriteInputTokens: 0,
  }),
};

describe("usage_provider: the build names the dialect its usage comes back in", () => {
  let stack: Stack;
  let client: HarnessClient;
  const workspace = mkdtempSync(join(tmpdir(), "pg-usage-provider-"));

  beforeAll(async () => {
    stack = await startStack({ cacheMonitor: true });
    client = createHarnessClient({
      sessionEvents: stack.addresses["session-events"],
      promptAssembly: stack.addresses["prompt-assembly"],
      cacheMonitor: stack.addresses["cache-monitor"],
      deadlineMs: 10_000,
    });
  });
  afterAll(async () => {
    client?.close();
    await stack?.stop();
  });

  it.each([
    [WireFormat.WIRE_FORMAT_OPENAI_CHAT, "openai_chat"],
    [WireFormat.WIRE_FORMAT_OPENAI_RESPONSES, "openai_responses"],
    [WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES, "anthropic"],
    [WireFormat.WIRE_FORMAT_BEDROCK_CONVERSE, "bedrock_converse"],
  ])("wire format %i answers with %s usage, which RecordUsage reads as sent", async (wireFormat, provider) => {
    const sessionId = `usage-${provider}`;
    await client.createSession({ sessionId, owner: "u1", workspace });
    const { build } = await client.runTurn(sessionId, "你好", { model: "m-1", wireFormat, workspace });
    expect(build.usageProvider).toBe(provider);
    const usageJson = USAGE_BY_PROVIDER[build.usageProvider] ?? "";
    const recorded = await client.recordRawUsage(sessionId, {
      provider: build.usageProvider,
      usageJson,
      requestId: build.requestId,
      model: "m-1",
      calledAtMs: Date.now(),
    });
    expect(recorded.cost).toBeGreaterThan(0);
    const monitor = stack.monitor;
    if (monitor === undefined) throw new Error("the stack has no cache-monitor");
    const trace = await callUnary(monitor, monitor.traceSession, { sessionId, limit: 10 }, { deadlineMs: 10_000 });
    const usage = trace.builds.find((entry) => entry.hasUsage)?.usage;
    expect(usage).toMatchObject({
      requestId: build.requestId,
      promptTokens: 2000,
      cachedTokens: 1536,
      completionTokens: 50,
    });
  });
});
