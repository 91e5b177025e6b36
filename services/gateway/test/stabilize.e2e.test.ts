// Stabilize mode with clients nobody here wrote: the official SDKs run a tool-using conversation
// across a simulated midnight (a faked clock whose date the harness writes at the top of its system
// prompt, as harnesses do) through the gateway to the fake provider. In observe mode the day-2
// request changes the system prompt and misses the cache; in stabilize mode the upstream sees day 1's
// system prompt on every request, no block of the prompt ever changes, the cache is read, and the
// model sees seed 000's <date-change> notice on the message that crossed midnight.

import Anthropic from "@anthropic-ai/sdk";
import { dateChangeNoticeText } from "@prefix-guard/seed-texts";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExchangeObservation } from "../src/application/observer";
import { STABILIZED_HEADER, STABILIZED_METRIC } from "../src/domain/stabilize/rules";
import {
  ANTHROPIC_KEY,
  type GatewayUnderTest,
  OPENAI_KEY,
  SYSTEM_PROMPT,
  startGatewayUnderTest,
} from "./gateway-harness";

type Wire = "messages" | "chat" | "responses";

const DAY_1 = "2026-12-04";
const DAY_2 = "2026-12-05";
/** The user turns and the day each is sent on; each turn is a tool call, then a text answer. */
const TURNS = [
  { day: DAY_1, text: "Find the config loader and tell me what it reads" },
  { day: DAY_2, text: "Now check how the tests start the server" },
  { day: DAY_2, text: "And where the docs describe it" },
];
const CALLS = TURNS.length * 2;
/** The crossing request: the first one sent on day 2. */
const CROSSING = 2;
const NOTICE = dateChangeNoticeText(DAY_2, "en");

/** The system prompt as the harness writes it on `today` (the date first, as a volatile env line). */
const systemOn = (today: string) => `Today's date is ${today}.\n${SYSTEM_PROMPT}`;

/** Tools listed out of canonical order, as a harness with a plugin map might. */
const TOOL_SPECS = [
  { name: "read_file", description: "Read a file of the repository" },
  { name: "grep", description: "Search the repository" },
];
const schema = { type: "object", properties: { query: { type: "string" } } };

interface Run {
  /** The x-prefix-guard-stabilized header of each response ("" when absent). */
  readonly stabilizedHeaders: string[];
  /** The system prompt the SDK sent, per call. */
  readonly sentSystems: string[];
  /** The tool-call `query` the model answered each user turn's first call with. */
  readonly toolQueries: string[];
}

function recordingFetch(headers: string[], bodies: string[]): typeof fetch {
  return async (input, init) => {
    bodies.push(typeof init?.body === "string" ? init.body : "");
    const response = await fetch(input, init);
    headers.push(response.headers.get(STABILIZED_HEADER) ?? "");
    return response;
  };
}

function systemOf(wire: Wire, body: string): string {
  const parsed = JSON.parse(body) as {
    system?: { text: string }[];
    messages?: { content: string }[];
    instructions?: string;
  };
  if (wire === "messages") return parsed.system?.map((block) => block.text).join("") ?? "";
  if (wire === "chat") return parsed.messages?.[0]?.content ?? "";
  return parsed.instructions ?? "";
}

async function converse(wire: Wire, stream: boolean, baseUrl: string): Promise<Run> {
  const stabilizedHeaders: string[] = [];
  const bodies: string[] = [];
  const fetch = recordingFetch(stabilizedHeaders, bodies);
  const toolQueries: string[] = [];
  const headers = { "x-prefix-guard-session": `midnight-${wire}-${stream}` };
  let today = DAY_1;

  if (wire === "messages") {
    const client = new Anthropic({
      apiKey: ANTHROPIC_KEY,
      baseURL: baseUrl,
      maxRetries: 0,
      fetch,
      defaultHeaders: headers,
    });
    const tools = TOOL_SPECS.map((tool) => ({ ...tool, input_schema: schema as Anthropic.Tool.InputSchema }));
    const history: Anthropic.MessageParam[] = [];
    for (const turn of TURNS) {
      today = turn.day;
      history.push({ role: "user", content: [{ type: "text", text: turn.text }] });
      for (let step = 0; step < 2; step += 1) {
        // Claude Code's breakpoints: the system block and the newest message's last block.
        const messages = history.map((message, index) =>
          index === history.length - 1 && Array.isArray(message.content)
            ? {
                ...message,
                content: message.content.map((block, at, all) =>
                  at === all.length - 1 ? { ...block, cache_control: { type: "ephemeral" as const } } : block,
                ),
              }
            : message,
        ) as Anthropic.MessageParam[];
        const params: Anthropic.MessageCreateParamsNonStreaming = {
          model: "claude-sonnet-4-5",
          max_tokens: 1024,
          system: [{ type: "text", text: systemOn(today), cache_control: { type: "ephemeral" } }],
          tools,
          messages,
        };
        const message = stream
          ? await client.messages.stream(params).finalMessage()
          : await client.messages.create(params);
        history.push({ role: "assistant", content: message.content });
        const toolUse = message.content.find((block) => block.type === "tool_use");
        if (toolUse?.type !== "tool_use") break;
        toolQueries.push((toolUse.input as { query: string }).query);
        history.push({
          role: "user",
          content: [{ type: "tool_result", tool_use_id: toolUse.id, content: "found it" }],
        });
      }
    }
  } else {
    const client = new OpenAI({
      apiKey: OPENAI_KEY,
      baseURL: `${baseUrl}/v1`,
      maxRetries: 0,
      fetch,
      defaultHeaders: headers,
    });
    if (wire === "chat") {
      const tools = TOOL_SPECS.map((tool) => ({
        type: "function" as const,
        function: { ...tool, parameters: schema },
      }));
      const history: OpenAI.Chat.ChatCompletionMessageParam[] = [];
      for (const turn of TURNS) {
        today = turn.day;
        history.push({ role: "user", content: turn.text });
        for (let step = 0; step < 2; step += 1) {
          const params = {
            model: "gpt-4o",
            messages: [{ role: "system" as const, content: systemOn(today) }, ...history],
            tools,
          };
          const completion = stream
            ? await client.chat.completions.stream(params).finalChatCompletion()
            : await client.chat.completions.create(params);
          const message = completion.choices[0]?.message as OpenAI.Chat.ChatCompletionMessage;
          history.push(message);
          const call = message.tool_calls?.[0];
          if (call?.type !== "function") break;
          toolQueries.push((JSON.parse(call.function.arguments) as { query: string }).query);
          history.push({ role: "tool", tool_call_id: call.id, content: "found it" });
        }
      }
    } else {
      const tools = TOOL_SPECS.map((tool) => ({
        type: "function" as const,
        ...tool,
        parameters: schema,
        strict: false,
      }));
      const input: OpenAI.Responses.ResponseInputItem[] = [];
      for (const turn of TURNS) {
        today = turn.day;
        input.push({ role: "user", content: turn.text });
        for (let step = 0; step < 2; step += 1) {
          const params = { model: "gpt-4.1", instructions: systemOn(today), input, tools };
          const response = stream
            ? await client.responses.stream(params).finalResponse()
            : await client.responses.create(params);
          const call = response.output.find((item) => item.type === "function_call");
          if (call?.type !== "function_call") {
            input.push({ role: "assistant", content: response.output_text });
            break;
          }
          toolQueries.push((JSON.parse(call.arguments) as { query: string }).query);
          input.push({ type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments });
          input.push({ type: "function_call_output", call_id: call.call_id, output: "found it" });
        }
      }
    }
  }
  return { stabilizedHeaders, sentSystems: bodies.map((body) => systemOf(wire, body)), toolQueries };
}

const CASES: ReadonlyArray<readonly [Wire, boolean]> = [
  ["messages", false],
  ["messages", true],
  ["chat", true],
  ["responses", false],
];

describe.each(CASES)("%s (stream: %s) across midnight", (wire, stream) => {
  let observe: GatewayUnderTest;
  let stabilize: GatewayUnderTest;
  let observeRun: Run;
  let stabilizeRun: Run;
  let observed: readonly ExchangeObservation[];
  let stabilized: readonly ExchangeObservation[];

  beforeAll(async () => {
    observe = await startGatewayUnderTest();
    stabilize = await startGatewayUnderTest({ GATEWAY_MODE: "stabilize" });
    observeRun = await converse(wire, stream, observe.gateway.url);
    stabilizeRun = await converse(wire, stream, stabilize.gateway.url);
    observed = await observe.observer.waitFor(CALLS);
    stabilized = await stabilize.observer.waitFor(CALLS);
  });

  afterAll(async () => {
    await observe?.stop();
    await stabilize?.stop();
  });

  const upstreamBodies = (sut: GatewayUnderTest) => sut.fake.requests.map((request) => request.body.toString("utf8"));
  const cached = (observations: readonly ExchangeObservation[]) =>
    observations.map((observation) => observation.usage?.cachedTokens ?? -1);

  it("the harness's clock crossed midnight: it wrote day 2 into its system prompt", () => {
    expect(stabilizeRun.sentSystems.slice(0, CROSSING)).toEqual([systemOn(DAY_1), systemOn(DAY_1)]);
    expect(new Set(stabilizeRun.sentSystems.slice(CROSSING))).toEqual(new Set([systemOn(DAY_2)]));
  });

  it("observe mode: the day-2 request changes the system block and misses the cache", () => {
    const before = observed[CROSSING - 1]?.cut.blocks ?? [];
    const crossing = observed[CROSSING]?.cut.blocks ?? [];
    const firstChanged = crossing.findIndex((block, index) => block.sha256 !== before[index]?.sha256);
    expect(crossing[firstChanged]?.kind).toBe("system");
    expect(cached(observed)[CROSSING - 1]).toBeGreaterThan(1000);
    expect(cached(observed)[CROSSING]).toBeLessThan(200);
  });

  it("stabilize mode: the upstream gets day 1's system prompt on every request, and no block ever changes", () => {
    const bodies = upstreamBodies(stabilize);
    expect(bodies.length).toBe(CALLS);
    for (const body of bodies) expect(systemOf(wire, body)).toBe(systemOn(DAY_1));
    for (let index = 1; index < stabilized.length; index += 1) {
      const before = stabilized[index - 1]?.cut.blocks.map((block) => block.sha256) ?? [];
      const now = stabilized[index]?.cut.blocks.map((block) => block.sha256) ?? [];
      expect(now.slice(0, before.length)).toEqual(before);
    }
    // No collapse: the crossing request reads the cache as the requests before it did.
    expect(cached(stabilized)[CROSSING]).toBeGreaterThan(1000);
    expect(cached(stabilized)[CROSSING]).toBeGreaterThanOrEqual(cached(stabilized)[CROSSING - 1] ?? 0);
  });

  it("stabilize mode: the model sees the <date-change> notice on the message that crossed, on every later request too", () => {
    const bodies = upstreamBodies(stabilize);
    // The whole notice (the model's echo of it below is cut at 40 characters), once per request.
    const written = JSON.stringify(NOTICE).slice(1, -1);
    bodies.forEach((body, index) => {
      expect(body.split(written).length - 1).toBe(index < CROSSING ? 0 : 1);
    });
    // The fake model echoes the start of the newest user text in its tool call: it read the notice.
    expect(stabilizeRun.toolQueries[0]).toBe(TURNS[0]?.text.slice(0, 40));
    expect(stabilizeRun.toolQueries[1]).toBe(NOTICE.slice(0, 40));
    expect(stabilizeRun.toolQueries[2]).toBe(TURNS[2]?.text.slice(0, 40));
    expect(observeRun.toolQueries[1]).toBe(TURNS[1]?.text.slice(0, 40));
  });

  it("says which rules fired in a response header and in /metrics", async () => {
    // The tools were out of order and their schemas' keys too ({type, properties}).
    expect(stabilizeRun.stabilizedHeaders).toEqual([
      "tool_order,tool_schema",
      "tool_order,tool_schema",
      ...Array(CALLS - CROSSING).fill("tool_order,tool_schema,volatile_spans"),
    ]);
    expect(observeRun.stabilizedHeaders).toEqual(Array(CALLS).fill(""));
    const metrics = await stabilize.gateway.metrics.getSingleMetricAsString(STABILIZED_METRIC);
    expect(metrics).toContain(`${STABILIZED_METRIC}{rule="volatile_spans",service="gateway"} ${CALLS - CROSSING}`);
    expect(metrics).toContain(`${STABILIZED_METRIC}{rule="tool_order",service="gateway"} ${CALLS}`);
    expect(metrics).toContain(`${STABILIZED_METRIC}{rule="breakpoints",service="gateway"} 0`);
  });
});

describe("breakpoints for an Anthropic client that placed none", () => {
  let observe: GatewayUnderTest;
  let stabilize: GatewayUnderTest;

  beforeAll(async () => {
    observe = await startGatewayUnderTest();
    stabilize = await startGatewayUnderTest({ GATEWAY_MODE: "stabilize" });
  });

  afterAll(async () => {
    await observe?.stop();
    await stabilize?.stop();
  });

  /** Three calls of a growing conversation without any cache_control; the cache reads of each. */
  async function cacheReads(sut: GatewayUnderTest): Promise<number[]> {
    const client = new Anthropic({ apiKey: ANTHROPIC_KEY, baseURL: sut.gateway.url, maxRetries: 0 });
    const messages: Anthropic.MessageParam[] = [];
    const reads: number[] = [];
    for (const turn of TURNS) {
      messages.push({ role: "user", content: turn.text });
      const message = await client.messages.create({
        model: "claude-sonnet-4-5",
        max_tokens: 256,
        system: SYSTEM_PROMPT,
        messages,
      });
      reads.push(message.usage.cache_read_input_tokens ?? 0);
      messages.push({ role: "assistant", content: message.content });
    }
    return reads;
  }

  it("observe mode caches nothing; stabilize mode marks the system prompt and the newest turn, and reads them back", async () => {
    expect(await cacheReads(observe)).toEqual([0, 0, 0]);
    const reads = await cacheReads(stabilize);
    expect(reads[0]).toBe(0);
    expect(reads[1]).toBeGreaterThan(1000);
    expect(reads[2]).toBeGreaterThan(reads[1] ?? 0);
    const first = JSON.parse(stabilize.fake.request(0).body.toString("utf8")) as { system: unknown };
    expect(first.system).toEqual([{ type: "text", text: SYSTEM_PROMPT, cache_control: { type: "ephemeral" } }]);
  });
});
