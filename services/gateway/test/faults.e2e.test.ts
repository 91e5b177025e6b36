// The gateway when things go wrong: upstream errors pass through as they were, a client that leaves
// takes the upstream request with it, timeouts and unreachable upstreams answer in the provider's
// error shape, and what the gateway refuses it refuses before forwarding anything.

import http from "node:http";
import type { AddressInfo } from "node:net";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import {
  anthropicClient,
  type GatewayUnderTest,
  OPENAI_KEY,
  openAiClient,
  type SdkExchange,
  SYSTEM_PROMPT,
  startGatewayUnderTest,
} from "./gateway-harness";

let sut: GatewayUnderTest | undefined;

afterEach(async () => {
  await sut?.stop();
  sut = undefined;
});

async function start(env: Record<string, string> = {}, gzip = false): Promise<GatewayUnderTest> {
  sut = await startGatewayUnderTest(env, { gzip });
  return sut;
}

const chatBody = (stream: boolean) =>
  JSON.stringify({ model: "gpt-4o", stream, messages: [{ role: "user", content: "hello" }] });

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", authorization: `Bearer ${OPENAI_KEY}`, ...headers },
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

async function metricValue(gateway: GatewayUnderTest, name: string, labels: string): Promise<number> {
  const text = await gateway.gateway.metrics.metrics();
  const line = text
    .split("\n")
    .find((candidate) => candidate.startsWith(`${name}{${labels},`) || candidate.startsWith(`${name}{${labels}}`));
  return line === undefined ? Number.NaN : Number(line.split(" ").at(-1));
}

describe("upstream errors", () => {
  it.each([429, 500])("passes an OpenAI %i through unchanged: status, headers and body", async (status) => {
    const { fake, gateway } = await start();
    fake.failNext(1, { status, headers: { "retry-after": "7", "x-request-id": "req_err" } });
    const exchanges: SdkExchange[] = [];
    const error = await openAiClient(gateway.url, exchanges)
      .chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(status);
    expect(await exchanges[0]?.receivedBody).toBe(fake.request(0).response().toString("utf8"));
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get("retry-after")).toBe("7");
  });

  it.each([429, 500])("passes an Anthropic %i through unchanged to the SDK", async (status) => {
    const { fake, gateway } = await start();
    fake.failNext(1, { status });
    const exchanges: SdkExchange[] = [];
    const error = await anthropicClient(gateway.url, exchanges)
      .messages.create({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(status);
    expect(await exchanges[0]?.receivedBody).toBe(fake.request(0).response().toString("utf8"));
  });
});

describe("a client that goes away mid-stream", () => {
  it("destroys the upstream request (OpenAI SDK, chat stream)", async () => {
    const gateway = await start();
    gateway.fake.stallNext({ afterEvents: 2 });
    const controller = new AbortController();
    const stream = await openAiClient(gateway.gateway.url, []).chat.completions.create(
      { model: "gpt-4o", stream: true, messages: [{ role: "user", content: "hello there friend" }] },
      { signal: controller.signal },
    );
    const seen: unknown[] = [];
    try {
      for await (const chunk of stream) {
        seen.push(chunk);
        controller.abort();
      }
    } catch {
      // The SDK may end the iteration or throw its abort error: either way the client left.
    }
    // The fake sent two events before it stalled; the client left after the first.
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.length).toBeLessThanOrEqual(2);
    expect(await gateway.fake.request(0).ended).toBe("aborted");
    const [observation] = await gateway.observer.waitFor(1);
    expect(observation?.outcome).toBe("client_aborted");
    expect(await metricValue(gateway, "prefixguard_gateway_unobserved_total", 'reason="client_aborted"')).toBe(1);
  });

  it("destroys the upstream request (Anthropic SDK, message stream)", async () => {
    const gateway = await start();
    gateway.fake.stallNext({ afterEvents: 3 });
    const controller = new AbortController();
    const stream = anthropicClient(gateway.gateway.url, []).messages.stream(
      { model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hello" }] },
      { signal: controller.signal },
    );
    stream.on("streamEvent", () => controller.abort());
    await expect(stream.finalMessage()).rejects.toThrow();
    expect(await gateway.fake.request(0).ended).toBe("aborted");
  });

  it("destroys the upstream request while it waits for the response headers", async () => {
    const gateway = await start();
    gateway.fake.stallNext({ afterEvents: "before_headers" });
    const controller = new AbortController();
    const call = openAiClient(gateway.gateway.url, []).chat.completions.create(
      { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] },
      { signal: controller.signal },
    );
    await gateway.fake.received(1);
    controller.abort();
    await expect(call).rejects.toThrow();
    expect(await gateway.fake.request(0).ended).toBe("aborted");
  });
});

describe("timeouts and an unreachable upstream", () => {
  it("answers 504 in OpenAI's shape when the headers do not come in time", async () => {
    const { fake, gateway } = await start({ UPSTREAM_HEADERS_TIMEOUT_MS: "100" });
    fake.stallNext({ afterEvents: "before_headers" });
    const response = await post(`${gateway.url}/v1/chat/completions`, chatBody(false));
    expect(response.status).toBe(504);
    expect(JSON.parse(response.text)).toEqual({
      error: {
        message: `prefix-guard gateway: upstream ${fake.url} sent no response headers within 100 ms (UPSTREAM_HEADERS_TIMEOUT_MS)`,
        type: "server_error",
        param: null,
        code: "upstream_timeout",
      },
    });
    expect(await fake.request(0).ended).toBe("aborted");
  });

  it("cuts the client's stream when the upstream goes quiet mid-body", async () => {
    const { fake, gateway, observer } = await start({ UPSTREAM_IDLE_TIMEOUT_MS: "100" });
    fake.stallNext({ afterEvents: 2 });
    const body = JSON.stringify({
      model: "claude-sonnet-4-5",
      max_tokens: 10,
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
    expect(await fake.request(0).ended).toBe("aborted");
    expect((await observer.waitFor(1))[0]?.outcome).toBe("upstream_failed");
  });

  it("answers 502 in Anthropic's shape when the upstream cannot be reached, to the SDK too", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { gateway } = await start({ ANTHROPIC_UPSTREAM_URL: `http://127.0.0.1:${port}` });
    const error = await anthropicClient(gateway.url, [])
      .messages.create({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    const apiError = error as InstanceType<typeof Anthropic.APIError>;
    expect(apiError.status).toBe(502);
    expect(apiError.error).toEqual({
      type: "error",
      error: {
        type: "api_error",
        message: `prefix-guard gateway: upstream http://127.0.0.1:${port} failed: ECONNREFUSED`,
      },
    });
    expect(
      await metricValue(
        sut as GatewayUnderTest,
        "prefixguard_gateway_upstream_failures_total",
        'upstream="anthropic",kind="connect_failed"',
      ),
    ).toBe(1);
  });
});

describe("what the gateway refuses", () => {
  it("refuses a bad session header with 400 naming it, forwarding nothing", async () => {
    const { fake, gateway } = await start();
    const response = await post(`${gateway.url}/v1/chat/completions`, chatBody(false), {
      "x-prefix-guard-session": "not ok!",
    });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text).error).toMatchObject({
      type: "invalid_request_error",
      code: "invalid_session_header",
      message: expect.stringContaining("x-prefix-guard-session"),
    });
    expect(fake.requests).toEqual([]);
  });

  it("refuses a body over GATEWAY_MAX_BODY_BYTES with 413, forwarding nothing", async () => {
    const { fake, gateway } = await start({ GATEWAY_MAX_BODY_BYTES: "2048" });
    const body = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, system: SYSTEM_PROMPT, messages: [] });
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(413);
    expect(JSON.parse(await response.text())).toEqual({
      type: "error",
      error: {
        type: "request_too_large",
        message: "prefix-guard gateway: request body exceeds GATEWAY_MAX_BODY_BYTES (2048 bytes)",
      },
    });
    expect(fake.requests).toEqual([]);
  });

  it("passes other /v1/ calls through untouched and unobserved, and answers its own health", async () => {
    const { fake, gateway, observer } = await start();
    const models = await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${OPENAI_KEY}` } });
    expect(models.status).toBe(200);
    expect(await models.text()).toBe(fake.request(0).response().toString("utf8"));
    expect(fake.request(0).headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${gateway.url}/other`)).status).toBe(404);
    expect(observer.observations).toEqual([]);
  });
});

describe("compressed answers", () => {
  it("passes gzip through to the SDK and still reads the usage", async () => {
    const { fake, gateway, observer } = await start({}, true);
    const completion = await openAiClient(gateway.url, []).chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(fake.request(0).headers["accept-encoding"]).toContain("gzip");
    const [observation] = await observer.waitFor(1);
    expect(observation?.usage?.promptTokens).toBe(completion.usage?.prompt_tokens);
  });

  it("hides the usage it asked for from a gzipped stream", async () => {
    const { gateway, observer } = await start({}, true);
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    for await (const chunk of await openAiClient(gateway.url, []).chat.completions.create({
      model: "gpt-4o",
      stream: true,
      messages: [{ role: "user", content: "hello there" }],
    }))
      chunks.push(chunk);
    expect(chunks.every((chunk) => chunk.usage === undefined && chunk.choices.length === 1)).toBe(true);
    const [observation] = await observer.waitFor(1);
    expect(observation?.usage?.completionTokens).toBeGreaterThan(0);
  });
});
