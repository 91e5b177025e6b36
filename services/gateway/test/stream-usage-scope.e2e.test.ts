// The include_usage change belongs to OpenAI Chat Completions alone, in either mode: an Anthropic
// stream that stabilize mode rewrote reaches the upstream without `stream_options` and the client
// with every event (message_delta, which carries the usage, included), while an OpenAI Chat stream
// still gets include_usage asked for and its usage chunk hidden.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ANTHROPIC_KEY, type GatewayUnderTest, OPENAI_KEY, startGatewayUnderTest } from "./gateway-harness";

const anthropicBody = JSON.stringify({
  model: "claude-sonnet-4-5",
  max_tokens: 256,
  system: "You are terse.",
  messages: [{ role: "user", content: "Say hello." }],
  stream: true,
});

const chatBody = JSON.stringify({
  model: "gpt-4.1",
  messages: [
    { role: "system", content: "You are terse." },
    { role: "user", content: "Say hello." },
  ],
  stream: true,
});

describe("stream_options in stabilize mode", () => {
  let sut: GatewayUnderTest;

  beforeAll(async () => {
    sut = await startGatewayUnderTest({ GATEWAY_MODE: "stabilize" });
  });

  afterAll(async () => {
    await sut?.stop();
  });

  it("leaves an Anthropic stream's request and events alone", async () => {
    const response = await fetch(`${sut.gateway.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": ANTHROPIC_KEY, "anthropic-version": "2023-06-01" },
      body: anthropicBody,
    });
    const received = await response.text();
    expect(response.status).toBe(200);
    const sent = sut.fake.requests.at(-1);
    expect(sent?.body.toString("utf8")).not.toContain("stream_options");
    expect(received).toBe(sent?.response().toString("utf8"));
    expect(received).toContain("event: message_delta");
  });

  it("still asks an OpenAI Chat stream for its usage, and hides the usage chunk", async () => {
    const response = await fetch(`${sut.gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${OPENAI_KEY}` },
      body: chatBody,
    });
    const received = await response.text();
    expect(response.status).toBe(200);
    expect(sut.fake.requests.at(-1)?.body.toString("utf8")).toContain('"stream_options":{"include_usage":true}');
    expect(received).toContain("data: [DONE]");
    expect(received).not.toContain('"usage"');
  });
});
