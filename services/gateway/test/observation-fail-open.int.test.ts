// The gateway publishes what it observes straight to the bus, through an outbox in its own database
// while the bus refuses, and fails open: with the bus refusing and that database closed under it,
// or unreachable from the start, every call still reaches the provider and the client as usual, and
// each exchange whose events could be neither published nor written is counted in
// prefixguard_gateway_unobserved_total{reason} instead.

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

const SESSION = "fail-open-session";

/** Nothing listens on port 1: connecting is refused at once. */
const UNREACHABLE = "mysql://root@127.0.0.1:1/pg_gateway_unreachable";

const anthropicBody = (date: string) =>
  JSON.stringify({
    model: "claude-sonnet-4-5",
    max_tokens: 64,
    system: [{ type: "text", text: `You are a careful agent. Today is ${date}. ${"Be precise. ".repeat(400)}` }],
    messages: [{ role: "user", content: [{ type: "text", text: "Fix the bug" }] }],
    metadata: { user_id: SESSION },
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
  flaky.down = false;
  for (const subject of running.splice(0).reverse()) await subject.stop();
});

afterAll(async () => {
  await fake.stop();
  await bus.close();
  await busDb.destroy();
});

/** The shared bus, refusing every publish while `down` (a broker that is gone). */
const flaky = { down: false };
function flakyBus(): MessageBus {
  return {
    kind: bus.kind,
    ensureTopics: (specs) => bus.ensureTopics(specs),
    publish: async (topic, messages) => {
      if (flaky.down) throw new Error("broker unreachable");
      await bus.publish(topic, messages);
    },
    subscribe: (options) => bus.subscribe(options),
    close: async () => undefined,
  };
}

/** What reached the bus for the session since `sinceMs`, per topic in offset order. */
async function published(sinceMs: number) {
  const rows = (await busDb("bus_message")
    .where("created_at_ms", ">=", sinceMs)
    .andWhere({ message_key: SESSION })
    .orderBy([{ column: "topic" }, { column: "offset" }])
    .select("topic", "value", "headers_json")) as { topic: string; value: Buffer; headers_json: string }[];
  return {
    prefix: rows
      .filter((row) => row.topic === "prompt.prefix.v1")
      .map((row) => PrefixEvent.decode(new Uint8Array(row.value)).type),
    usage: rows.filter((row) => row.topic === "llm.usage.v1").length,
    headers: rows.map((row) => JSON.parse(row.headers_json) as Record<string, string>),
  };
}

async function publishPath(gateway: RunningGateway): Promise<string | undefined> {
  const metric = (await gateway.metrics.getMetricsAsJSON()).find((m) => m.name === "prefixguard_gateway_publish_path");
  const values = (metric?.values ?? []) as { labels: Record<string, string>; value: number }[];
  return values.find((value) => value.value === 1)?.labels.path;
}

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
    { logger, bus: flakyBus() },
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

  it("are published straight to the bus while it takes them, the outbox left empty", async () => {
    const gateway = await gatewayOn(database.url);
    const since = Date.now();
    expect(await call(gateway, "2026-12-04")).toMatchObject({ status: 200 });
    expect(await call(gateway, "2026-12-05")).toMatchObject({ status: 200 });
    // Both requests' fingerprints, the second one's change and both usages.
    const events = await eventually(
      async () => {
        const now = await published(since);
        return now.prefix.length >= 3 && now.usage >= 2 ? now : undefined;
      },
      { what: "the gateway's events on the bus" },
    );
    expect(events.prefix).toEqual(["FingerprintObserved", "FingerprintObserved", "PrefixChanged"]);
    expect(events.usage).toBe(2);
    // Marked as the relay marks what it publishes, so a subscriber cannot tell the paths apart.
    expect(events.headers.every((headers) => headers["pg-relay"] !== undefined && headers.ce_id !== undefined)).toBe(
      true,
    );
    // The database opens in the background; once it has, its outbox holds nothing.
    await eventually(async () => (await database.db.schema.hasTable("outbox_message")) || undefined, {
      what: "the gateway's database migrated",
    });
    expect(Number((await database.db("outbox_message").count({ n: "*" }))[0]?.n)).toBe(0);
    expect(await publishPath(gateway)).toBe("direct");
    expect(await unobserved(gateway, "outbox_failed")).toBe(0);
  });

  it("go through the outbox while the bus refuses them, in order, and straight to the bus once it is drained", async () => {
    const gateway = await gatewayOn(database.url);
    const since = Date.now();
    const rows = async (published: boolean) =>
      Number(
        (
          await database
            .db("outbox_message")
            .where((query) => (published ? query.whereNotNull("published_at_ms") : query.whereNull("published_at_ms")))
            .count({ n: "*" })
        )[0]?.n,
      );
    flaky.down = true;
    expect(await call(gateway, "2026-12-04")).toMatchObject({ status: 200 });
    expect(await call(gateway, "2026-12-05")).toMatchObject({ status: 200 });
    // Both exchanges written (fingerprint, change, usages): none published, none dropped.
    await eventually(async () => ((await rows(false)) === 5 ? true : undefined), {
      what: "the events waiting in the outbox",
    });
    expect(await publishPath(gateway)).toBe("outbox");
    expect((await published(since)).prefix).toEqual([]);

    flaky.down = false;
    // Made before the relay has published what waited: it waits behind it, in the outbox.
    expect(await call(gateway, "2026-12-06")).toMatchObject({ status: 200 });
    await eventually(async () => ((await rows(false)) === 0 ? true : undefined), { what: "the outbox relayed" });
    // Then calls go straight to the bus again.
    let day = 7;
    await eventually(
      async () => {
        expect(await call(gateway, `2026-12-${String(day++).padStart(2, "0")}`)).toMatchObject({ status: 200 });
        return (await publishPath(gateway)) === "direct" ? true : undefined;
      },
      { what: "the gateway publishing straight to the bus again" },
    );
    const written = await rows(true);
    expect(await call(gateway, "2027-01-01")).toMatchObject({ status: 200 });
    const events = await eventually(
      async () => {
        const now = await published(since);
        return now.prefix.length === 3 + 2 * (day - 6 + 1) ? now : undefined;
      },
      { what: "every call's events on the bus" },
    );
    // In the order the calls were made: what waited in the outbox came first.
    expect(events.prefix).toEqual([
      "FingerprintObserved",
      "FingerprintObserved",
      "PrefixChanged",
      ...Array.from({ length: day - 6 + 1 }, () => ["FingerprintObserved", "PrefixChanged"]).flat(),
    ]);
    expect(await rows(true)).toBe(written);
    expect(await unobserved(gateway, "outbox_failed")).toBe(0);
    expect(logLines.some((line) => line.includes("gateway bus publish failed"))).toBe(true);
    expect(logLines.some((line) => line.includes("gateway outbox drained"))).toBe(true);
  });

  it("lose nothing when the database is closed under the gateway while the bus takes them; with both gone, count what they dropped", async () => {
    const scratch = await createTestDatabase("gw_fail_open_closed");
    const opened = () => logLines.filter((line) => line.includes("gateway observations publishing")).length;
    const openedBefore = opened();
    const gateway = await gatewayOn(scratch.url);
    const since = Date.now();
    expect(await call(gateway, "2026-12-04")).toMatchObject({ status: 200 });
    await eventually(() => opened() > openedBefore || undefined, { what: "the gateway's database open" });
    // The database goes away: its tables with it.
    await scratch.drop();
    const before = fake.requests.length;
    const answers = [await call(gateway, "2026-12-05"), await call(gateway, "2026-12-06")];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(answers.every((answer) => answer.body.includes('"usage"'))).toBe(true);
    expect(fake.requests.length).toBe(before + 2);
    await eventually(async () => ((await published(since)).usage === 3 ? true : undefined), {
      what: "the three calls' events on the bus",
    });
    expect(await unobserved(gateway, "outbox_failed")).toBe(0);

    // The bus refuses too: the outbox cannot take them either, so each exchange is counted.
    flaky.down = true;
    const more = [await call(gateway, "2026-12-07"), await call(gateway, "2026-12-08")];
    expect(more.map((answer) => answer.status)).toEqual([200, 200]);
    await eventually(async () => (await unobserved(gateway, "outbox_failed")) === 2 || undefined, {
      what: "two exchanges counted as unobserved",
    });
    expect(logLines.some((line) => line.includes("gateway outbox write failed"))).toBe(true);
  });

  it("lose nothing when the database is unreachable from the start while the bus takes them; with the bus gone too, count what they dropped", async () => {
    const gateway = await gatewayOn(UNREACHABLE);
    const since = Date.now();
    const answers = [await call(gateway, "2026-12-04"), await call(gateway, "2026-12-05")];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    await eventually(async () => ((await published(since)).usage === 2 ? true : undefined), {
      what: "both calls' events on the bus",
    });
    flaky.down = true;
    expect(await call(gateway, "2026-12-06")).toMatchObject({ status: 200 });
    expect(await call(gateway, "2026-12-07")).toMatchObject({ status: 200 });
    await eventually(async () => (await unobserved(gateway, "outbox_unavailable")) === 2 || undefined, {
      what: "two exchanges counted as unobserved",
    });
    expect(logLines.some((line) => line.includes("gateway database unavailable"))).toBe(true);
    // No credentials of the database URL or the provider key in what the gateway logged.
    expect(logLines.join("\n")).not.toContain("sk-ant-test");
  });
});
