// The gateway publishes what it observes through an outbox in its own database, and fails open:
// with that database closed under it, or unreachable from the start, every call still reaches the
// provider and the client as usual, and each exchange whose events could not be written is counted
// in prefixguard_gateway_unobserved_total{reason} instead.

import { createEmbeddedBus, embeddedBusMigrations, type MessageBus } from "@prefix-guard/bus";
import { eventually } from "@prefix-guard/bus/testing";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { createLogger, type Logger } from "@prefix-guard/logging";
import { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import { defaultTopicSpecs } from "@prefix-guard/runtime";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadGatewayConfig } from "../src/config";
import { type RunningGateway, startGateway } from "../src/service";
import { FakeProvider } from "./fake-provider";

/** Nothing listens on port 1: connecting is refused at once. */
const UNREACHABLE = "mysql://root@127.0.0.1:1/pg_gateway_unreachable";

const anthropicBody = (date: string) =>
  JSON.stringify({
    model: "claude-sonnet-4-5",
    max_tokens: 64,
    system: [{ type: "text", text: `You are a careful agent. Today is ${date}. ${"Be precise. ".repeat(400)}` }],
    messages: [{ role: "user", content: [{ type: "text", text: "Fix the bug" }] }],
    metadata: { user_id: "fail-open-session" },
  });

let busDb: Database;
let bus: MessageBus;
let fake: FakeProvider;
const running: Array<{ stop(): Promise<void> }> = [];
const logLines: string[] = [];
const logger: Logger = createLogger({
  service: "gateway",
  level: "debug",
  destination: { write: (line: string) => logLines.push(line) },
});

beforeAll(async () => {
  busDb = createDatabase("sqlite::memory:");
  await runMigrations(busDb, embeddedBusMigrations);
  bus = createEmbeddedBus({ db: busDb, logger });
  await bus.ensureTopics(defaultTopicSpecs(1));
  fake = await FakeProvider.start();
});

afterEach(async () => {
  for (const subject of running.splice(0).reverse()) await subject.stop();
});

afterAll(async () => {
  await fake.stop();
  await bus.close();
  await busDb.destroy();
});

async function gatewayOn(databaseUrl: string): Promise<RunningGateway> {
  const gateway = await startGateway(
    loadGatewayConfig({
      GATEWAY_PORT: "0",
      ANTHROPIC_UPSTREAM_URL: fake.url,
      OPENAI_UPSTREAM_URL: fake.url,
      DATABASE_URL: databaseUrl,
      GATEWAY_OUTBOX_TIMEOUT_MS: "1000",
      SHUTDOWN_GRACE_MS: "1000",
    }),
    { logger, bus },
  );
  running.push(gateway);
  return gateway;
}

async function call(gateway: RunningGateway, date: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`${gateway.url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01" },
    body: anthropicBody(date),
  });
  return { status: response.status, body: await response.text() };
}

async function unobserved(gateway: RunningGateway, reason: string): Promise<number> {
  const metric = (await gateway.metrics.getMetricsAsJSON()).find(
    (m) => m.name === "prefixguard_gateway_unobserved_total",
  );
  const values = (metric?.values ?? []) as { labels: Record<string, string>; value: number }[];
  return values.find((value) => value.labels.reason === reason)?.value ?? 0;
}

describe("the gateway's observations, failing open", () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase("gw_fail_open");
  });

  afterAll(async () => {
    await database.drop().catch(() => undefined);
  });

  it("are published through the outbox while the database is up", async () => {
    const gateway = await gatewayOn(database.url);
    expect(await call(gateway, "2026-12-04")).toMatchObject({ status: 200 });
    expect(await call(gateway, "2026-12-05")).toMatchObject({ status: 200 });
    // Both requests' fingerprints, the second one's change and both usages, relayed to the bus.
    const rows = await eventually(
      async () => {
        const published = await database
          .db("outbox_message")
          .whereNotNull("published_at_ms")
          .orderBy("id")
          .select("topic", "payload");
        return published.length >= 5 ? published : undefined;
      },
      { what: "the gateway's events relayed" },
    );
    const types = rows.map((row) =>
      row.topic === "prompt.prefix.v1" ? PrefixEvent.decode(new Uint8Array(row.payload as Buffer)).type : row.topic,
    );
    expect(types).toEqual([
      "FingerprintObserved",
      "llm.usage.v1",
      "FingerprintObserved",
      "PrefixChanged",
      "llm.usage.v1",
    ]);
    expect(await unobserved(gateway, "outbox_failed")).toBe(0);
  });

  it("leave every call unaffected when the database is closed under the gateway, and count what they dropped", async () => {
    const gateway = await gatewayOn(database.url);
    const rows = async () => Number((await database.db("outbox_message").count({ n: "*" }))[0]?.n);
    const written = await rows();
    expect(await call(gateway, "2026-12-04")).toMatchObject({ status: 200 });
    // A new gateway remembers no session: a first request, its fingerprint and usage.
    await eventually(async () => (await rows()) === written + 2 || undefined, {
      what: "the first call's events written",
    });
    // The database goes away: its tables with it.
    await database.drop();
    const before = fake.requests.length;
    const answers = [await call(gateway, "2026-12-05"), await call(gateway, "2026-12-06")];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(answers.every((answer) => answer.body.includes('"usage"'))).toBe(true);
    expect(fake.requests.length).toBe(before + 2);
    await eventually(async () => (await unobserved(gateway, "outbox_failed")) === 2 || undefined, {
      what: "two exchanges counted as unobserved",
    });
    expect(logLines.some((line) => line.includes("gateway outbox write failed"))).toBe(true);
  });

  it("leave every call unaffected when the database is unreachable from the start, and count what they dropped", async () => {
    const gateway = await gatewayOn(UNREACHABLE);
    const answers = [await call(gateway, "2026-12-04"), await call(gateway, "2026-12-05")];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    await eventually(async () => (await unobserved(gateway, "outbox_unavailable")) === 2 || undefined, {
      what: "two exchanges counted as unobserved",
    });
    expect(logLines.some((line) => line.includes("gateway database unavailable"))).toBe(true);
    // No credentials of the database URL or the provider key in what the gateway logged.
    expect(logLines.join("\n")).not.toContain("sk-ant-test");
  });
});
