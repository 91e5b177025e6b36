// Who may call the gateway: the principals of PRINCIPALS_FILE, by a token in `x-prefix-guard-token`.
// One rule per case: no token, a wrong token, a principal without the harness role, a rotated
// file, a principal over its rate. The token never reaches the upstream and never a log line; the
// provider's own key passes through as before. Without PRINCIPALS_FILE on loopback every caller is
// the local principal.

import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "@prefix-guard/bus/testing";
import { tokenSha256Hex } from "@prefix-guard/grpc";
import { createLogger } from "@prefix-guard/logging";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InMemoryObserver } from "../src/application/observer";
import { loadGatewayConfig } from "../src/config";
import { type RunningGateway, startGateway } from "../src/service";
import { FakeProvider } from "./fake-provider";
import { ANTHROPIC_KEY, OPENAI_KEY } from "./gateway-harness";

const TOKENS = {
  harness: "pg-harness-token-5f1e0c2a9b7d",
  rotated: "pg-harness-rotated-8a3c6e1f0d4b",
  sre: "pg-sre-token-2c9d7a1e6b3f",
  limited: "pg-limited-token-0e4b8c2d6a1f",
  wrong: "pg-wrong-token-7d1a3e5c9b2f",
} as const;

const harnessEntry = (token: string) => ({
  name: "harness-team-a",
  roles: ["harness"],
  scope: "team-a",
  owners: ["*"],
  workspaces: ["*"],
  token_sha256: [tokenSha256Hex(token)],
});
const principalsText = (harnessToken: string) =>
  JSON.stringify({
    principals: [
      harnessEntry(harnessToken),
      { name: "oncall", roles: ["sre"], token_sha256: [tokenSha256Hex(TOKENS.sre)] },
      {
        name: "limited",
        roles: ["harness"],
        owners: ["*"],
        workspaces: ["*"],
        token_sha256: [tokenSha256Hex(TOKENS.limited)],
        requests_per_second: 1,
        burst: 1,
      },
    ],
  });

const dir = mkdtempSync(join(tmpdir(), "pg-gateway-auth-"));
const principalsFile = join(dir, "principals.json");
let version = 0;
/** Replaces the file the way a Secret volume does: a new file renamed over the old. */
function writePrincipals(text: string): void {
  version += 1;
  const staged = join(dir, `.principals.${version}`);
  writeFileSync(staged, text);
  renameSync(staged, principalsFile);
}

let fake: FakeProvider;
let gateway: RunningGateway;
const observer = new InMemoryObserver();
const logLines: string[] = [];
let clock = 1_000_000;

beforeAll(async () => {
  writePrincipals(principalsText(TOKENS.harness));
  fake = await FakeProvider.start();
  gateway = await startGateway(
    loadGatewayConfig({
      GATEWAY_PORT: "0",
      OPENAI_UPSTREAM_URL: fake.url,
      ANTHROPIC_UPSTREAM_URL: fake.url,
      SHUTDOWN_GRACE_MS: "1000",
      PRINCIPALS_FILE: principalsFile,
      PRINCIPALS_RELOAD_MS: "100",
    }),
    {
      logger: createLogger({
        service: "gateway",
        level: "trace",
        destination: { write: (line: string) => logLines.push(line) },
      }),
      observer,
      now: () => clock,
    },
  );
});

afterAll(async () => {
  await gateway?.stop();
  await fake?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const chatBody = JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "hello" }] });

async function chat(token?: string) {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    body: chatBody,
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${OPENAI_KEY}`,
      ...(token === undefined ? {} : { "x-prefix-guard-token": token }),
    },
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

async function messages(token?: string) {
  const response = await fetch(`${gateway.url}/v1/messages`, {
    method: "POST",
    body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
    headers: {
      "content-type": "application/json",
      "x-api-key": ANTHROPIC_KEY,
      "anthropic-version": "2023-06-01",
      ...(token === undefined ? {} : { "x-prefix-guard-token": token }),
    },
  });
  return { status: response.status, text: await response.text() };
}

/** The answer carries none of the secrets in play. */
function expectNoSecret(text: string): void {
  for (const secret of [...Object.values(TOKENS), OPENAI_KEY, ANTHROPIC_KEY]) expect(text).not.toContain(secret);
}

describe("the gateway's callers (PRINCIPALS_FILE)", () => {
  it("refuses a call without a token: 401 in the provider's shape, naming the header, nothing forwarded", async () => {
    const before = fake.requests.length;
    const openai = await chat();
    expect(openai.status).toBe(401);
    expect(JSON.parse(openai.text).error).toMatchObject({ type: "invalid_request_error", code: "unauthenticated" });
    expect(JSON.parse(openai.text).error.message).toContain("x-prefix-guard-token");
    expectNoSecret(openai.text);
    const anthropic = await messages();
    expect(anthropic.status).toBe(401);
    expect(JSON.parse(anthropic.text)).toMatchObject({ type: "error", error: { type: "authentication_error" } });
    // Calls that are only piped through are guarded too.
    expect(
      (await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${OPENAI_KEY}` } })).status,
    ).toBe(401);
    expect(fake.requests.length).toBe(before);
  });

  it("the official SDK raises its own AuthenticationError for the refusal", async () => {
    const client = new OpenAI({ apiKey: OPENAI_KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const error = await client.chat.completions
      .create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("refuses a wrong token without repeating it", async () => {
    const before = fake.requests.length;
    const refused = await chat(TOKENS.wrong);
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.text).error.message).toContain("invalid bearer token");
    expectNoSecret(refused.text);
    // The digest listed in the file is not a token either.
    expect((await chat(tokenSha256Hex(TOKENS.harness))).status).toBe(401);
    expect(fake.requests.length).toBe(before);
  });

  it("refuses a principal without the harness role: 403, naming the role it lacks", async () => {
    const before = fake.requests.length;
    const denied = await messages(TOKENS.sre);
    expect(denied.status).toBe(403);
    expect(JSON.parse(denied.text)).toMatchObject({ type: "error", error: { type: "permission_error" } });
    expect(JSON.parse(denied.text).error.message).toContain("oncall may not call the gateway");
    expect(JSON.parse(denied.text).error.message).toContain("harness");
    expect(fake.requests.length).toBe(before);
  });

  it("forwards a harness's call with the provider's key and without the token, and observes its principal", async () => {
    const before = observer.observations.length;
    const admitted = await chat(TOKENS.harness);
    expect(admitted.status).toBe(200);
    const forwarded = fake.requests.at(-1);
    expect(forwarded?.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(forwarded?.headers["x-prefix-guard-token"]).toBeUndefined();
    expect(JSON.stringify(forwarded?.headers)).not.toContain(TOKENS.harness);
    const [observation] = (await observer.waitFor(before + 1)).slice(before);
    expect(observation?.principal).toMatchObject({ name: "harness-team-a", scope: "team-a" });
  });

  it("holds a principal to its request rate: 429 with retry-after, then admits it once the bucket refilled", async () => {
    expect((await chat(TOKENS.limited)).status).toBe(200);
    const limited = await chat(TOKENS.limited);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("1");
    expect(Number(limited.headers.get("retry-after-ms"))).toBeGreaterThan(0);
    expect(JSON.parse(limited.text).error).toMatchObject({ code: "rate_limited" });
    // Another principal has its own bucket.
    expect((await chat(TOKENS.harness)).status).toBe(200);
    clock += 1_000;
    expect((await chat(TOKENS.limited)).status).toBe(200);
  });

  it("takes a rotated principals file without a restart: the new token in, the removed one out", async () => {
    expect((await chat(TOKENS.rotated)).status).toBe(401);
    writePrincipals(principalsText(TOKENS.rotated));
    await eventually(async () => (await chat(TOKENS.rotated)).status === 200, {
      what: "the gateway to read the rotated principals file",
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    expect((await chat(TOKENS.harness)).status).toBe(401);
  });

  it("counts refusals by outcome and never writes a token or a key into a log line or a metric", async () => {
    const metrics = await gateway.metrics.metrics();
    const series = (name: string, labels: string) => new RegExp(`^${name}\\{[^}]*${labels}[^}]*\\} [1-9]`, "m");
    expect(metrics).toMatch(
      series("prefixguard_gateway_requests_total", 'route="openai_chat",outcome="unauthenticated"'),
    );
    expect(metrics).toMatch(
      series("prefixguard_gateway_requests_total", 'route="anthropic_messages",outcome="forbidden"'),
    );
    expect(metrics).toMatch(series("prefixguard_gateway_requests_total", 'route="openai_chat",outcome="rate_limited"'));
    expect(metrics).toMatch(series("prefixguard_gateway_responses_total", 'route="openai_chat",status="4xx"'));
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.some((line) => line.includes("caller refused"))).toBe(true);
    const written = `${logLines.join("\n")}\n${metrics}`;
    for (const secret of [...Object.values(TOKENS), OPENAI_KEY, ANTHROPIC_KEY]) expect(written).not.toContain(secret);
  });
});

describe("the gateway on loopback without PRINCIPALS_FILE", () => {
  it("serves every caller as the local principal, with or without a token", async () => {
    const local = new InMemoryObserver();
    const open = await startGateway(
      loadGatewayConfig({
        GATEWAY_PORT: "0",
        OPENAI_UPSTREAM_URL: fake.url,
        ANTHROPIC_UPSTREAM_URL: fake.url,
        SHUTDOWN_GRACE_MS: "1000",
      }),
      { logger: createLogger({ service: "gateway", level: "silent" }), observer: local },
    );
    try {
      const response = await fetch(`${open.url}/v1/chat/completions`, {
        method: "POST",
        body: chatBody,
        headers: { "content-type": "application/json", authorization: `Bearer ${OPENAI_KEY}` },
      });
      expect(response.status).toBe(200);
      const [observation] = await local.waitFor(1);
      expect(observation?.principal).toMatchObject({ name: "local", scope: "" });
    } finally {
      await open.stop();
    }
  });

  it("refuses to start off loopback without PRINCIPALS_FILE, and off loopback with it but without TLS", async () => {
    const start = (env: Record<string, string>) =>
      startGateway(loadGatewayConfig({ GATEWAY_PORT: "0", GATEWAY_HOST: "0.0.0.0", ...env }), {
        logger: createLogger({ service: "gateway", level: "silent" }),
      });
    await expect(start({})).rejects.toThrow(/PRINCIPALS_FILE: GATEWAY_HOST=0\.0\.0\.0 is not a loopback address/);
    await expect(start({ PRINCIPALS_FILE: principalsFile })).rejects.toThrow(
      /GATEWAY_TLS_CERT_FILE: .*bearer tokens need TLS/,
    );
  });
});
