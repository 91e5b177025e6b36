// Observe mode with clients nobody here wrote: the official OpenAI and Anthropic SDKs run
// tool-using conversations against the fake provider once directly and once through the gateway.
// Every byte the SDK sent must reach the upstream, every byte the upstream sent must reach the SDK
// (and parse to the same results as the direct run), the API key must reach the upstream and no
// log line, and the observer must get each call's cut and usage.

import type { NormalizedUsage } from "@prefix-guard/providers/usage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExchangeObservation } from "../src/application/observer";
import { FakeProvider, type RecordedRequest } from "./fake-provider";
import {
  ANTHROPIC_KEY,
  anthropicClient,
  type CallResults,
  chatConversation,
  type GatewayUnderTest,
  messagesConversation,
  OPENAI_KEY,
  openAiClient,
  responsesConversation,
  type SdkExchange,
  startGatewayUnderTest,
} from "./gateway-harness";

type Wire = "chat" | "responses" | "messages";

interface Run {
  readonly results: CallResults;
  readonly exchanges: SdkExchange[];
  readonly received: string[];
}

async function converse(wire: Wire, stream: boolean, baseUrl: string, headers?: Record<string, string>): Promise<Run> {
  const exchanges: SdkExchange[] = [];
  const results =
    wire === "messages"
      ? await messagesConversation(anthropicClient(baseUrl, exchanges, headers), stream)
      : wire === "chat"
        ? await chatConversation(openAiClient(baseUrl, exchanges, headers), stream)
        : await responsesConversation(openAiClient(baseUrl, exchanges, headers), stream);
  return { results, exchanges, received: await Promise.all(exchanges.map((exchange) => exchange.receivedBody)) };
}

/** A number at a dotted path of parsed JSON (the test's own reading of the fake's answers). */
function at(value: unknown, path: string): unknown {
  let current = value;
  for (const key of path.split(".")) current = (current as Record<string, unknown> | undefined)?.[key];
  return current;
}

/** The usage the fake reported in a recorded answer (read here independently of the gateway). */
function reportedUsage(wire: Wire, recorded: RecordedRequest): unknown {
  const text = recorded.response().toString("utf8");
  if (!text.startsWith("data:") && !text.startsWith("event:")) return at(JSON.parse(text), "usage");
  const events: unknown[] = text
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice("data: ".length)));
  if (wire === "chat")
    return at(
      events.find((event) => at(event, "usage") != null),
      "usage",
    );
  if (wire === "responses")
    return at(
      events.find((event) => at(event, "type") === "response.completed"),
      "response.usage",
    );
  const start = at(
    events.find((event) => at(event, "type") === "message_start"),
    "message.usage",
  );
  const delta = at(
    events.find((event) => at(event, "type") === "message_delta"),
    "usage",
  );
  return { ...(start as object), ...(delta as object) };
}

function promptTokensOf(wire: Wire, usage: unknown): number {
  if (wire === "chat") return at(usage, "prompt_tokens") as number;
  if (wire === "responses") return at(usage, "input_tokens") as number;
  return ["input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]
    .map((field) => at(usage, field) as number)
    .reduce((sum, tokens) => sum + tokens, 0);
}

function cachedTokensOf(wire: Wire, usage: unknown): number {
  if (wire === "chat") return at(usage, "prompt_tokens_details.cached_tokens") as number;
  if (wire === "responses") return at(usage, "input_tokens_details.cached_tokens") as number;
  return at(usage, "cache_read_input_tokens") as number;
}

const CASES: ReadonlyArray<readonly [Wire, boolean]> = [
  ["chat", false],
  ["chat", true],
  ["responses", false],
  ["responses", true],
  ["messages", false],
  ["messages", true],
];

describe.each(CASES)("%s (stream: %s) through the gateway", (wire, stream) => {
  let direct: FakeProvider;
  let sut: GatewayUnderTest;
  let directRun: Run;
  let gatewayRun: Run;
  let observations: readonly ExchangeObservation[];

  beforeAll(async () => {
    direct = await FakeProvider.start();
    sut = await startGatewayUnderTest();
    directRun = await converse(wire, stream, direct.url);
    gatewayRun = await converse(wire, stream, sut.gateway.url, { "x-prefix-guard-session": `conv-${wire}-${stream}` });
    observations = await sut.observer.waitFor(gatewayRun.exchanges.length);
  });

  afterAll(async () => {
    await sut?.stop();
    await direct?.stop();
  });

  it("runs a multi-turn conversation with tool calls", () => {
    expect(gatewayRun.exchanges.length).toBe(4);
    expect(sut.fake.requests.length).toBe(4);
  });

  it("delivers every byte the SDK sent to the upstream", () => {
    gatewayRun.exchanges.forEach((exchange, index) => {
      const forwarded = sut.fake.request(index).body.toString("utf8");
      if (wire === "chat" && stream) {
        // The one change: the gateway asks for the stream's usage, appended as the last member.
        expect(exchange.sentBody).not.toContain("stream_options");
        expect(forwarded).toBe(`${exchange.sentBody.slice(0, -1)},"stream_options":{"include_usage":true}}`);
      } else expect(forwarded).toBe(exchange.sentBody);
    });
  });

  it("delivers every byte the upstream sent to the SDK, which parses it as it does directly", () => {
    gatewayRun.received.forEach((received, index) => {
      const sent = sut.fake.request(index).response().toString("utf8");
      // Without include_usage asked by the client, it gets the stream the direct call got.
      if (wire === "chat" && stream) expect(received).toBe(directRun.received[index]);
      else expect(received).toBe(sent);
    });
    expect(gatewayRun.received).toEqual(directRun.received);
    expect(gatewayRun.results).toEqual(directRun.results);
  });

  it("passes the API key to the upstream, never into a log line, and keeps its own header to itself", () => {
    const key = wire === "messages" ? ANTHROPIC_KEY : OPENAI_KEY;
    sut.fake.requests.forEach((request, index) => {
      const sent = gatewayRun.exchanges[index]?.sentHeaders;
      // Whichever header the SDK carries its key in (Anthropic's SDKs have used both).
      const keyHeaders = ["authorization", "x-api-key"].filter((name) => sent?.get(name)?.includes(key));
      expect(keyHeaders.length).toBeGreaterThan(0);
      for (const name of keyHeaders) expect(request.headers[name]).toBe(sent?.get(name));
      expect(sent?.get("x-prefix-guard-session")).toBe(`conv-${wire}-${stream}`);
      expect(request.headers["x-prefix-guard-session"]).toBeUndefined();
    });
    expect(sut.logLines.length).toBeGreaterThan(0);
    for (const line of sut.logLines) {
      expect(line).not.toContain(OPENAI_KEY);
      expect(line).not.toContain(ANTHROPIC_KEY);
    }
  });

  it("tells the observer each call's cut, session and usage", () => {
    expect(observations.map((observation) => observation.route)).toEqual(
      Array(4).fill(wire === "chat" ? "openai_chat" : wire === "responses" ? "openai_responses" : "anthropic_messages"),
    );
    observations.forEach((observation, index) => {
      expect(observation.session).toEqual({ id: `conv-${wire}-${stream}`, source: "header" });
      expect(observation.outcome).toBe("completed");
      expect(observation.responseStatus).toBe(200);
      expect(observation.requestBytes.toString("utf8")).toBe(gatewayRun.exchanges[index]?.sentBody);
      expect(observation.usageInjected).toBe(wire === "chat" && stream);
      // tools, the system prompt, then the conversation so far.
      expect(observation.cut.blocks.slice(0, 2).map((block) => block.kind)).toEqual(["tools", "system"]);
      expect(observation.blockTokens.length).toBe(observation.cut.blocks.length);
      expect(observation.blockText(observation.cut.blocks.length - 1)).toMatch(/^\{/);
      const usage = reportedUsage(wire, sut.fake.request(index));
      expect(observation.usage).toMatchObject<Partial<NormalizedUsage>>({
        promptTokens: promptTokensOf(wire, usage),
        cachedTokens: cachedTokensOf(wire, usage),
      });
    });
    // The conversation grows: each call's blocks start with the previous call's (the rolling
    // cache_control marker does not count as a change).
    for (let index = 1; index < observations.length; index += 1) {
      const before = observations[index - 1]?.cut.blocks.map((block) => block.sha256) ?? [];
      const now = observations[index]?.cut.blocks.map((block) => block.sha256) ?? [];
      expect(now.slice(0, before.length)).toEqual(before);
    }
    // The simulated prefix cache: the second call reads what the first one wrote.
    expect(observations[1]?.usage?.cachedTokens).toBeGreaterThan(1000);
  });
});
