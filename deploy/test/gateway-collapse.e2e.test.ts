// docs/decisions/gateway.md, proven: harnesses nobody here wrote (the official Anthropic and OpenAI SDKs, pointed
// at the gateway with baseURL) run tool-using conversations against the fake provider, over the real
// stack on Kafka. A date change across midnight (the harness's faked clock puts today's date in its
// system prompt, opencode #32622) and a tool-set change (opencode #50055) are named as collapses with
// the right block, byte and cause code, the same in prefixctl, on cache.collapse.v1 and in /metrics.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { eventually, uniqueName } from "@prefix-guard/bus/testing";
import { decodeEnvelope } from "@prefix-guard/events";
import { loadGatewayConfig, type RunningGateway, startGateway } from "@prefix-guard/gateway";
import { FakeProvider } from "@prefix-guard/gateway/testing";
import { silentLogger } from "@prefix-guard/logging";
import { type CacheCollapsed, CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { freePort, runPrefixctl } from "./support";

/** Long enough for the providers' 1024-token cache minimum (≈ bytes / 4 in the fake). */
const GUIDE = `You are a careful coding agent in a large repository. ${"Follow the conventions, run the tests, explain each change. ".repeat(90)}`;

const DAY = 86_400_000;
/** The harness's clock: 23:58 on 4 December, moved past midnight before the last turn. */
let harnessNow = Date.UTC(2026, 11, 4, 23, 58, 0);
const today = () => new Date(harnessNow).toISOString().slice(0, 10);

const anthropicTools: Anthropic.Tool[] = [
  {
    name: "read_file",
    description: "Read a file of the repository",
    input_schema: { type: "object", properties: { query: { type: "string" } } },
  },
  { name: "grep", description: "Search the repository", input_schema: { type: "object", properties: {} } },
];

const chatTool = (name: string, description: string): OpenAI.Chat.ChatCompletionTool => ({
  type: "function",
  function: { name, description, parameters: { type: "object", properties: { query: { type: "string" } } } },
});
/** The build agent's tools, and the plan agent's after the user switches agents. */
const BUILD_TOOLS = [
  chatTool("read_file", "Read a file"),
  chatTool("edit_file", "Edit a file"),
  chatTool("bash", "Run"),
];
const PLAN_TOOLS = [chatTool("read_file", "Read a file")];

/**
 * One user turn of an agent loop with the Anthropic SDK, Claude Code's way: the system prompt (with
 * today's date) and a rolling breakpoint on the newest message; a tool call answered, then the text.
 */
async function anthropicTurn(client: Anthropic, history: Anthropic.MessageParam[], text: string, session: string) {
  history.push({ role: "user", content: [{ type: "text", text }] });
  for (let step = 0; step < 2; step += 1) {
    const messages = history.map((message, index) =>
      index === history.length - 1 && typeof message.content !== "string"
        ? ({
            ...message,
            content: message.content.map((block, at) =>
              at === message.content.length - 1 ? { ...block, cache_control: { type: "ephemeral" as const } } : block,
            ),
          } as Anthropic.MessageParam)
        : message,
    );
    const answer = await client.messages
      .stream({
        model: "claude-sonnet-4-5",
        max_tokens: 512,
        system: [{ type: "text", text: `${GUIDE}\nToday's date is ${today()}.`, cache_control: { type: "ephemeral" } }],
        tools: anthropicTools,
        messages,
        metadata: { user_id: session },
      })
      .finalMessage();
    history.push({ role: "assistant", content: answer.content });
    const toolUse = answer.content.find((block) => block.type === "tool_use");
    if (toolUse?.type !== "tool_use") return;
    history.push({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: toolUse.id, content: "config.ts reads GATEWAY_PORT" }],
    });
  }
}

/** One user turn with the OpenAI SDK (Chat Completions, non-streaming), keyed by prompt_cache_key. */
async function chatTurn(
  client: OpenAI,
  messages: OpenAI.Chat.ChatCompletionMessageParam[],
  text: string,
  tools: OpenAI.Chat.ChatCompletionTool[],
  session: string,
) {
  messages.push({ role: "user", content: text });
  for (let step = 0; step < 2; step += 1) {
    const completion = await client.chat.completions.create({
      model: "gpt-4o",
      messages,
      tools,
      prompt_cache_key: session,
    });
    const message = completion.choices[0]?.message;
    if (message === undefined) throw new Error("no choice");
    messages.push(message);
    const call = message.tool_calls?.[0];
    if (call === undefined) return;
    messages.push({ role: "tool", tool_call_id: call.id, content: "the config loader reads three variables" });
  }
}

describe("collapses of a harness's own traffic through the gateway, in prefixctl, on cache.collapse.v1 and in /metrics", () => {
  const dateSession = uniqueName("claude-code");
  const toolsSession = uniqueName("opencode");
  const published: { sessionId: string; collapse: CacheCollapsed }[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), "pg-gateway-e2e-"));
  let stack: Stack;
  let fake: FakeProvider;
  let gateway: RunningGateway;
  let metricsPort: number;
  let stopObserver: () => Promise<void>;

  beforeAll(async () => {
    metricsPort = await freePort();
    stack = await startStack({
      transport: "kafka",
      cacheMonitor: true,
      serviceEnv: { "cache-monitor": { METRICS_PORT: String(metricsPort) } },
    });
    const subscription = await stack.bus.subscribe({
      topic: "cache.collapse.v1",
      groupId: uniqueName("gateway-collapse-observer"),
      handleMessage: async (message) => {
        const event = decodeEnvelope(CacheCollapseEvent, message.value, "cache_collapse_event");
        if (event.payload?.$case === "collapsed" && [dateSession, toolsSession].includes(event.sessionId))
          published.push({ sessionId: event.sessionId, collapse: event.payload.value });
      },
    });
    stopObserver = () => subscription.stop();
    fake = await FakeProvider.start();
    gateway = await startGateway(
      loadGatewayConfig({
        GATEWAY_PORT: "0",
        ANTHROPIC_UPSTREAM_URL: fake.url,
        OPENAI_UPSTREAM_URL: fake.url,
        DATABASE_URL: `sqlite:${join(dataDir, "gateway.sqlite")}`,
        SHUTDOWN_GRACE_MS: "1000",
        LOG_LEVEL: "silent",
      }),
      { bus: stack.bus, logger: silentLogger() },
    );
  });

  afterAll(async () => {
    await gateway?.stop();
    await fake?.stop();
    await stopObserver?.();
    await stack?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** The session's collapses as `prefixctl collapses --json` prints them, once the expected code is there. */
  const collapsesOf = (session: string, causeCode: string) =>
    eventually(
      async () => {
        const run = await runPrefixctl([
          "collapses",
          "--since",
          "all",
          "--session",
          session,
          "--json",
          "--cache-monitor",
          stack.addresses["cache-monitor"],
        ]);
        if (run.code !== 0) return undefined;
        const json = JSON.parse(run.stdout) as { collapses: Array<Record<string, unknown>> };
        return json.collapses.some((c) => c.cause_code === causeCode) ? json.collapses : undefined;
      },
      { what: `a ${causeCode} collapse of ${session} in prefixctl`, timeoutMs: 60_000 },
    );

  it("names the date that moved at midnight: section_changed:system[0], block 1, the byte it diverged at", async () => {
    const client = new Anthropic({ apiKey: "sk-ant-e2e", baseURL: gateway.url, maxRetries: 0 });
    const history: Anthropic.MessageParam[] = [];
    await anthropicTurn(client, history, "Find the config loader", dateSession);
    await anthropicTurn(client, history, "Now check how the tests start the server", dateSession);
    harnessNow += DAY; // past midnight: the harness writes tomorrow's date into its system prompt
    await anthropicTurn(client, history, "And the shutdown path?", dateSession);

    const collapses = await collapsesOf(dateSession, "section_changed:system[0]");
    expect(collapses).toHaveLength(1);
    const [collapse] = collapses;
    // Tools first (block 0), the system prompt block 1: the date is near its end.
    expect(collapse).toMatchObject({
      source: "gateway",
      cause_code: "section_changed:system[0]",
      changed_sections: ["system[0]"],
      first_changed_block: { index: 1, kind: "system", role: "system" },
    });
    const offset = collapse?.diverged_offset as number;
    expect(offset).toBeGreaterThan(GUIDE.length);
    expect(collapse?.extra_cost as number).toBeGreaterThan(0);

    const text = await runPrefixctl([
      "collapses",
      "--since",
      "all",
      "--session",
      dateSession,
      "--wide",
      "--cache-monitor",
      stack.addresses["cache-monitor"],
    ]);
    expect(text.stdout).toContain(`system[0] (block 1 system @ byte ${offset.toLocaleString("en-US")})`);
    const trace = await runPrefixctl(["trace", dateSession, "--cache-monitor", stack.addresses["cache-monitor"]]);
    expect(trace.stdout).toContain("(requests through the gateway)");
    expect(trace.stdout).toMatch(/COLLAPSE\s+section_changed:system\[0\]/);

    const event = await eventually(
      () => published.find((p) => p.sessionId === dateSession && p.collapse.causeCode === "section_changed:system[0]"),
      { what: "the collapse on cache.collapse.v1", timeoutMs: 30_000 },
    );
    expect(event.collapse).toMatchObject({
      source: "gateway",
      firstChangedBlock: { index: 1, kind: "system", role: "system" },
      divergedOffset: offset,
    });
  });

  it("names the tool set that changed when the user switched agents: tools_changed on block 0", async () => {
    const client = new OpenAI({ apiKey: "sk-e2e-openai", baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "system", content: GUIDE }];
    await chatTurn(client, messages, "Find the config loader", BUILD_TOOLS, toolsSession);
    await chatTurn(client, messages, "Now check how the tests start the server", BUILD_TOOLS, toolsSession);
    await chatTurn(client, messages, "Plan the refactor", PLAN_TOOLS, toolsSession);

    const collapses = await collapsesOf(toolsSession, "tools_changed");
    expect(collapses).toHaveLength(1);
    expect(collapses[0]).toMatchObject({
      source: "gateway",
      cause_code: "tools_changed",
      tools_changed: true,
      changed_sections: [],
      first_changed_block: { index: 0, kind: "tools", role: "tools" },
    });
    const event = await eventually(
      () => published.find((p) => p.sessionId === toolsSession && p.collapse.causeCode === "tools_changed"),
      { what: "the collapse on cache.collapse.v1", timeoutMs: 30_000 },
    );
    expect(event.collapse.firstChangedBlock).toMatchObject({ index: 0, kind: "tools" });
  });

  it('counts both in /metrics under source="gateway", the block\'s kind as the section, never its index', async () => {
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    // At least 1: a fresh consumer group may also replay earlier runs' events from the shared broker.
    expect(metrics).toMatch(
      /prefixguard_cache_collapses_total\{(?=[^}]*section="system")(?=[^}]*cause="section_changed")(?=[^}]*source="gateway")[^}]*\} [1-9]\d*$/m,
    );
    expect(metrics).toMatch(
      /prefixguard_cache_collapses_total\{(?=[^}]*section="\(tools\)")(?=[^}]*cause="tools_changed")(?=[^}]*source="gateway")[^}]*\} [1-9]\d*$/m,
    );
    expect(metrics).not.toMatch(/section="system\[/);
    // Every call priced and counted like our builds' (6 per conversation), under its model's family.
    const gatewayCalls = [
      ...metrics.matchAll(
        /^prefixguard_llm_calls_total\{(?=[^}]*intake="topic")(?=[^}]*source="gateway")[^}]*\} (\d+)$/gm,
      ),
    ].reduce((sum, match) => sum + Number(match[1]), 0);
    expect(gatewayCalls).toBeGreaterThanOrEqual(12);
  });
});
