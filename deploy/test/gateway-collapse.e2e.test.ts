// docs/decisions/gateway.md, proven: harnesses nobody here wrote (the official Anthropic and OpenAI SDKs, pointed
// at the gateway with baseURL) run tool-using conversations against the fake provider, over the real
// stack on Kafka. A date change across midnight (the harness's faked clock puts today's date in its
// system prompt, opencode #32622) and a tool-set change (opencode #50055) are named as collapses with
// the right block, byte and cause code, the same in prefixctl, on cache.collapse.v1 and in /metrics.

import Anthropic from "@anthropic-ai/sdk";
import { eventually, uniqueName } from "@prefix-guard/bus/testing";
import type { CacheCollapsed } from "@prefix-guard/proto/events/v1/collapse_events";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import {
  type CollapseWatch,
  counterTotal,
  freePort,
  type GatewayOnFake,
  prefixctlJsonUntil,
  runPrefixctl,
  scrapeMetricsUntil,
  startGatewayOnFake,
  watchCollapses,
} from "./support";

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
  let stack: Stack;
  let collapseWatch: CollapseWatch;
  let proxy: GatewayOnFake;
  let metricsPort: number;

  beforeAll(async () => {
    metricsPort = await freePort();
    stack = await startStack({
      transport: "kafka",
      cacheMonitor: true,
      serviceEnv: { "cache-monitor": { METRICS_PORT: String(metricsPort) } },
    });
    collapseWatch = await watchCollapses(stack.bus, [dateSession, toolsSession]);
    proxy = await startGatewayOnFake(stack.bus);
  });

  afterAll(async () => {
    await proxy?.stop();
    await collapseWatch?.stop();
    await stack?.stop();
  });

  /** The session's collapse with the code, as cache-monitor published it on cache.collapse.v1. */
  const publishedCollapse = (session: string, causeCode: string) =>
    eventually(
      (): CacheCollapsed | undefined =>
        collapseWatch.events
          .filter((event) => event.sessionId === session)
          .flatMap((event) => (event.payload?.$case === "collapsed" ? [event.payload.value] : []))
          .find((collapse) => collapse.causeCode === causeCode),
      { what: `the ${causeCode} collapse of ${session} on cache.collapse.v1`, timeoutMs: 30_000 },
    );

  /** The session's collapses as `prefixctl collapses --json` prints them, once the expected code is there. */
  const collapsesOf = (session: string, causeCode: string) =>
    prefixctlJsonUntil(
      ["collapses", "--since", "all", "--session", session, "--cache-monitor", stack.addresses["cache-monitor"]],
      (json: { collapses: Array<Record<string, unknown>> }) =>
        json.collapses.some((c) => c.cause_code === causeCode) ? json.collapses : undefined,
      { what: `a ${causeCode} collapse of ${session} in prefixctl`, timeoutMs: 60_000 },
    );

  it("names the date that moved at midnight: section_changed:system[0], block 1, the byte it diverged at", async () => {
    const client = new Anthropic({ apiKey: "sk-ant-e2e", baseURL: proxy.gateway.url, maxRetries: 0 });
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

    expect(await publishedCollapse(dateSession, "section_changed:system[0]")).toMatchObject({
      source: "gateway",
      firstChangedBlock: { index: 1, kind: "system", role: "system" },
      divergedOffset: offset,
    });
  });

  it("names the tool set that changed when the user switched agents: tools_changed on block 0", async () => {
    const client = new OpenAI({ apiKey: "sk-e2e-openai", baseURL: `${proxy.gateway.url}/v1`, maxRetries: 0 });
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
    expect((await publishedCollapse(toolsSession, "tools_changed")).firstChangedBlock).toMatchObject({
      index: 0,
      kind: "tools",
    });
  });

  it('counts both in /metrics under source="gateway", the block\'s kind as the section, never its index', async () => {
    const collapseCounter = "prefixguard_cache_collapses_total";
    const dateCollapses = { section: "system", cause: "section_changed", source: "gateway" };
    const toolsCollapses = { section: "(tools)", cause: "tools_changed", source: "gateway" };
    // Every call priced and counted like our builds' (6 per conversation), under its model's family.
    const gatewayCalls = { intake: "topic", source: "gateway" };
    // cache-monitor counts a collapse after committing it, so prefixctl can list it a moment before
    // /metrics shows it. At least 1: a fresh consumer group may also replay earlier runs' events.
    const metrics = await scrapeMetricsUntil(metricsPort, [
      { name: collapseCounter, labels: dateCollapses },
      { name: collapseCounter, labels: toolsCollapses },
      { name: "prefixguard_llm_calls_total", labels: gatewayCalls, atLeast: 12 },
    ]);
    expect(counterTotal(metrics, collapseCounter, dateCollapses)).toBeGreaterThanOrEqual(1);
    expect(counterTotal(metrics, collapseCounter, toolsCollapses)).toBeGreaterThanOrEqual(1);
    expect(metrics).not.toMatch(/section="system\[/);
    expect(counterTotal(metrics, "prefixguard_llm_calls_total", gatewayCalls)).toBeGreaterThanOrEqual(12);
  });
});
