// docs/decisions/gateway.md under faults: the gateway with its outbox on MariaDB and its events on real Kafka,
// in front of the fake provider, called by the official `openai` and `@anthropic-ai/sdk` clients
// (maxRetries: 0, so what the SDK reports is the one exchange). An upstream 429 or 500 reaches the
// SDK as the provider sent it; a client that leaves mid-stream takes the upstream request with it;
// and with the gateway's database dropped under running traffic every call still succeeds and is
// observed (Kafka takes the events straight; the outbox is only the path while Kafka refuses), and
// once the database is back (recreated and migrated, as an operator restores it) nothing changed.

import { createHash, randomBytes } from "node:crypto";
import Anthropic from "@anthropic-ai/sdk";
import { eventually, testKafkaBrokers, uniqueName } from "@prefix-guard/bus/testing";
import { createDatabase, runMigrations } from "@prefix-guard/db";
import { loadGatewayConfig, type RunningGateway, startGateway } from "@prefix-guard/gateway";
import { FakeProvider } from "@prefix-guard/gateway/testing";
import { silentLogger } from "@prefix-guard/logging";
import { gatewayMigrations } from "@prefix-guard/migrations/gateway";
import knexFactory, { type Knex } from "knex";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { counterTotal, freePort, prefixctlJsonUntil, scrapeMetrics, scrapeMetricsUntil } from "./support";

/** The MariaDB server tests use (as @prefix-guard/db/testing's). */
const MYSQL_SERVER_URL = (process.env.TEST_MYSQL_URL ?? "mysql://root@127.0.0.1:3306").replace(/\/$/, "");
const MYSQL_SERVER = new URL(MYSQL_SERVER_URL);
/** `pg_gw_faults_<created at, ms>_<random>`: unique per run, and a leftover's age is in its name. */
const DATABASE_PREFIX = "pg_gw_faults_";
/** A run takes about a minute: a database of this prefix older than this was left by a killed run. */
const LEFTOVER_AGE_MS = 15 * 60_000;

/** Long enough for the providers' 1024-token cache minimum (≈ bytes / 4 in the fake). */
const GUIDE = `You are a careful coding agent in a large repository. ${"Follow the conventions, run the tests, explain each change. ".repeat(90)}`;

/** A connection to the MariaDB server itself, without a database: to create and drop the gateway's. */
function mysqlAdmin(): Knex {
  return knexFactory({
    client: "mysql2",
    connection: {
      host: MYSQL_SERVER.hostname,
      port: Number(MYSQL_SERVER.port || 3306),
      user: decodeURIComponent(MYSQL_SERVER.username || "root"),
      password: decodeURIComponent(MYSQL_SERVER.password),
      connectTimeout: 5_000,
    },
    pool: { min: 0, max: 1 },
  });
}

/** Drops the databases of earlier runs that were killed before their afterAll, never a live run's. */
async function dropLeftoverDatabases(admin: Knex, nowMs: number): Promise<void> {
  const [rows] = (await admin.raw("SHOW DATABASES LIKE ?", [`${DATABASE_PREFIX.replace(/_/g, "\\_")}%`])) as [
    Array<Record<string, string>>,
  ];
  for (const row of rows) {
    const name = Object.values(row)[0] ?? "";
    const createdMs = Number(/^pg_gw_faults_(\d+)_/.exec(name)?.[1]);
    if (Number.isFinite(createdMs) && nowMs - createdMs > LEFTOVER_AGE_MS)
      await admin.raw(`DROP DATABASE IF EXISTS \`${name}\``);
  }
}

/** One HTTP exchange as the SDK's fetch saw it: the body it sent and the body it was given. */
interface SdkExchange {
  readonly sent: string;
  readonly received: Promise<string>;
}

/** The SDK's fetch, recording each exchange; the SDK reads the response as usual. */
function recordingFetch(exchanges: SdkExchange[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    // A body the client aborts never completes: its copy reads as a marker no provider body equals.
    const received = response
      .clone()
      .text()
      .catch(() => "<aborted>");
    exchanges.push({ sent: typeof init?.body === "string" ? init.body : "", received });
    return response;
  };
}

/** prompt-assembly's request id, which the gateway gives a build: sha256 of `<length>:<session>\n` + the body sent. */
const requestIdOf = (sessionId: string, body: string) =>
  createHash("sha256").update(`${sessionId.length}:${sessionId}\n`).update(body).digest("hex");

describe("the gateway's faults over real Kafka and MariaDB, seen by the official SDKs", () => {
  const databaseName = `${DATABASE_PREFIX}${Date.now()}_${randomBytes(4).toString("hex")}`;
  const databaseUrl = `${MYSQL_SERVER_URL}/${databaseName}`;
  let admin: Knex;
  let stack: Stack;
  let fake: FakeProvider;
  let gateway: RunningGateway;

  beforeAll(async () => {
    admin = mysqlAdmin();
    await dropLeftoverDatabases(admin, Date.now());
    await admin.raw(`CREATE DATABASE \`${databaseName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    stack = await startStack({ transport: "kafka", cacheMonitor: true });
    fake = await FakeProvider.start();
    gateway = await startGateway(
      loadGatewayConfig({
        GATEWAY_PORT: "0",
        METRICS_PORT: String(await freePort()),
        ANTHROPIC_UPSTREAM_URL: fake.url,
        OPENAI_UPSTREAM_URL: fake.url,
        DATABASE_URL: databaseUrl,
        GATEWAY_OUTBOX_TIMEOUT_MS: "1000",
        SHUTDOWN_GRACE_MS: "1000",
        LOG_LEVEL: "silent",
        // As its own main runs it: observation on a thread of its own, with its own Kafka connection.
        TRANSPORT: "kafka",
        KAFKA_BROKERS: testKafkaBrokers.join(","),
      }),
      { logger: silentLogger(), observationThread: true },
    );
  });

  afterAll(async () => {
    await gateway?.stop();
    await fake?.stop();
    await stack?.stop();
    await admin?.raw(`DROP DATABASE IF EXISTS \`${databaseName}\``);
    await admin?.destroy();
  });

  const openAi = (exchanges: SdkExchange[]) =>
    new OpenAI({
      apiKey: "sk-e2e-openai",
      baseURL: `${gateway.url}/v1`,
      maxRetries: 0,
      fetch: recordingFetch(exchanges),
    });
  const anthropic = (exchanges: SdkExchange[] = []) =>
    new Anthropic({ apiKey: "sk-ant-e2e", baseURL: gateway.url, maxRetries: 0, fetch: recordingFetch(exchanges) });

  const UNOBSERVED = "prefixguard_gateway_unobserved_total";
  const metricsPort = (): number => {
    if (gateway.metricsPort === null) throw new Error("the gateway serves no /metrics");
    return gateway.metricsPort;
  };
  /** The gateway's exchanges it could not observe, for the reason, on its own /metrics now. */
  const unobserved = async (reason: string) => counterTotal(await scrapeMetrics(metricsPort()), UNOBSERVED, { reason });
  /** Its /metrics once at least `atLeast` exchanges are counted unobserved for the reason. */
  const unobservedReaching = (reason: string, atLeast: number) =>
    scrapeMetricsUntil(metricsPort(), [{ name: UNOBSERVED, labels: { reason }, atLeast }], {
      timeoutMs: 30_000,
    });

  /** The body the fake provider answered with for the response `id`. */
  const fakeAnswerFor = (id: string) =>
    fake.requests.map((request) => request.response().toString("utf8")).find((body) => body.includes(`"${id}"`));

  describe("upstream errors reach the SDK unchanged", () => {
    it("OpenAI: a 429 with its status, body and retry-after, and a 500", async () => {
      for (const status of [429, 500]) {
        const exchanges: SdkExchange[] = [];
        const headers = status === 429 ? { "retry-after": "7", "x-request-id": "req_limited" } : {};
        fake.failNext(1, { status, headers });
        const before = fake.requests.length;
        const error = await openAi(exchanges)
          .chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })
          .catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(OpenAI.APIError);
        const apiError = error as InstanceType<typeof OpenAI.APIError>;
        expect(apiError.status).toBe(status);
        // Forwarded once: the gateway never retries.
        expect(fake.requests.length).toBe(before + 1);
        const sent = fake.request(before).response().toString("utf8");
        expect(JSON.parse(sent)).toHaveProperty("error.message");
        expect(await exchanges[0]?.received).toBe(sent);
        if (status === 429) {
          expect(apiError).toBeInstanceOf(OpenAI.RateLimitError);
          expect(apiError.headers?.get("retry-after")).toBe("7");
          expect(apiError.requestID).toBe("req_limited");
        } else expect(apiError).toBeInstanceOf(OpenAI.InternalServerError);
      }
    });

    it("Anthropic: a 429 with its status, body and retry-after, and a 500", async () => {
      for (const status of [429, 500]) {
        const exchanges: SdkExchange[] = [];
        fake.failNext(1, { status, ...(status === 429 ? { headers: { "retry-after": "3" } } : {}) });
        const before = fake.requests.length;
        const error = await anthropic(exchanges)
          .messages.create({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] })
          .catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(Anthropic.APIError);
        const apiError = error as InstanceType<typeof Anthropic.APIError>;
        expect(apiError.status).toBe(status);
        expect(fake.requests.length).toBe(before + 1);
        const sent = fake.request(before).response().toString("utf8");
        expect(JSON.parse(sent)).toMatchObject({ type: "error" });
        expect(await exchanges[0]?.received).toBe(sent);
        expect(apiError.error).toEqual(JSON.parse(sent));
        if (status === 429) {
          expect(apiError).toBeInstanceOf(Anthropic.RateLimitError);
          expect(apiError.headers?.get("retry-after")).toBe("3");
        } else expect(apiError).toBeInstanceOf(Anthropic.InternalServerError);
      }
    });
  });

  it("closes the upstream request when the client aborts mid-stream, and serves the next call", async () => {
    const abortedBefore = await unobserved("client_aborted");
    fake.stallNext({ afterEvents: 3 });
    const index = fake.requests.length;
    const controller = new AbortController();
    const client = anthropic();
    const params = {
      model: "claude-sonnet-4-5",
      max_tokens: 64,
      messages: [{ role: "user" as const, content: "Explain the config loader" }],
    };
    const stream = client.messages.stream(params, { signal: controller.signal });
    let events = 0;
    stream.on("streamEvent", () => {
      events += 1;
      controller.abort();
    });
    await expect(stream.finalMessage()).rejects.toThrow();
    // The stream was open (the fake sent its first events, then held it) when the client left.
    expect(events).toBeGreaterThan(0);
    expect(await fake.request(index).ended).toBe("aborted");
    const counted = await unobservedReaching("client_aborted", abortedBefore + 1);
    expect(counterTotal(counted, UNOBSERVED, { reason: "client_aborted" })).toBe(abortedBefore + 1);

    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    const next = await client.messages.stream(params).finalMessage();
    expect(next.stop_reason).toBe("end_turn");
    expect(await fake.request(index + 1).ended).toBe("completed");
  });

  it("keeps traffic flowing through a database outage and observes every call of it, straight to Kafka", async () => {
    const session = uniqueName("gw-outage");
    const sessionExchanges: SdkExchange[] = [];
    const client = anthropic(sessionExchanges);
    const history: Anthropic.MessageParam[] = [];
    /** One call of the session; its answer must be the bytes the fake sent. */
    const turn = async (text: string, date: string) => {
      history.push({ role: "user", content: text });
      const message = await client.messages.create({
        model: "claude-sonnet-4-5",
        max_tokens: 64,
        system: `${GUIDE}\nToday's date is ${date}.`,
        messages: history,
        metadata: { user_id: session },
      });
      history.push({ role: "assistant", content: message.content });
      const exchange = sessionExchanges.at(-1);
      expect(await exchange?.received).toBe(fakeAnswerFor(message.id));
      return requestIdOf(session, exchange?.sent ?? "");
    };
    /** The session's builds in `prefixctl trace --json`, once there are `count`, each with its usage. */
    const traceOf = (count: number) =>
      prefixctlJsonUntil(
        ["trace", session, "--cache-monitor", stack.addresses["cache-monitor"]],
        ({ builds }: { builds: Array<Record<string, unknown>> }) =>
          builds.length >= count && builds.every((build) => build.usage !== null) ? builds : undefined,
        { what: `${count} gateway builds of ${session} in prefixctl trace` },
      );

    // Up: both calls are observed and reach cache-monitor.
    const observedBefore = [await turn("Find the config loader", "2026-12-04")];
    observedBefore.push(await turn("Now the tests", "2026-12-04"));
    expect((await traceOf(2)).map((build) => build.request_id)).toEqual(observedBefore);

    // Other traffic runs all along: an OpenAI conversation, call after call, through the outage.
    // Its first failure stops it and is kept, to be reported where the test looks.
    const background: SdkExchange[] = [];
    const backgroundClient = openAi(background);
    let outage = false;
    let running = true;
    let callsDuringOutage = 0;
    let trafficFailure: unknown = null;
    const traffic = (async () => {
      const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "system", content: GUIDE }];
      for (let call = 0; running; call += 1) {
        const startedInOutage = outage;
        messages.push({ role: "user", content: `Step ${call}` });
        const completion = await backgroundClient.chat.completions.create({
          model: "gpt-4o",
          messages,
          prompt_cache_key: `${session}-background`,
        });
        expect(await background.at(-1)?.received).toBe(fakeAnswerFor(completion.id));
        const answer = completion.choices[0]?.message;
        if (answer === undefined) throw new Error("no choice");
        messages.push(answer);
        if (startedInOutage && outage) callsDuringOutage += 1;
      }
    })().catch((error: unknown) => {
      trafficFailure = error;
    });

    try {
      const failedBefore = await unobserved("outbox_failed");
      const unavailableBefore = await unobserved("outbox_unavailable");
      await eventually(() => trafficFailure !== null || background.length >= 2, { what: "background traffic running" });
      await admin.raw(`DROP DATABASE \`${databaseName}\``);
      outage = true;
      const observedDuring = [await turn("And the shutdown path?", "2026-12-04")];
      observedDuring.push(await turn("Summarise", "2026-12-04"));
      // Kafka takes them: nothing waits for the database, nothing is dropped.
      expect((await traceOf(4)).map((build) => build.request_id)).toEqual([...observedBefore, ...observedDuring]);
      await eventually(() => trafficFailure !== null || callsDuringOutage >= 3, {
        what: "background calls during the outage",
      });
      expect(trafficFailure).toBeNull();
      expect(await unobserved("outbox_failed")).toBe(failedBefore);
      expect(await unobserved("outbox_unavailable")).toBe(unavailableBefore);

      // Back: recreated and migrated, as an operator restores it; the running gateway writes to it again.
      await admin.raw(`CREATE DATABASE \`${databaseName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
      const restored = createDatabase(databaseUrl);
      try {
        await runMigrations(restored, gatewayMigrations);
      } finally {
        await restored.destroy();
      }
      outage = false;
      // Past midnight: the gateway still compares with the session's last request (held in memory).
      const observedAfter = await turn("Good morning: where were we?", "2026-12-05");
      running = false;
      await traffic;
      expect(trafficFailure).toBeNull();
      expect(background.length).toBeGreaterThan(callsDuringOutage);

      const builds = await traceOf(5);
      expect(builds.map((build) => build.request_id)).toEqual([...observedBefore, ...observedDuring, observedAfter]);
      expect(builds.at(-1)).toMatchObject({
        source: "gateway",
        prefix_changed: true,
        changed_sections: ["system[0]"],
        first_changed_block: { kind: "system", role: "system" },
      });
    } finally {
      running = false;
      await traffic;
    }
  });
});
