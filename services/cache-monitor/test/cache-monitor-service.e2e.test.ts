// cache-monitor as a process would run it: the embedded bus (SQLite-backed log), the service on
// real MariaDB, and an SRE's questions asked over gRPC.
import { createServer } from "node:net";
import { credentials, Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { createEmbeddedBus, embeddedBusMigrations, type IncomingMessage, type MessageBus } from "@prefix-guard/bus";
import { eventually } from "@prefix-guard/bus/testing";
import { type Database, runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase, createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { encodeEnvelope, Topics } from "@prefix-guard/events";
import { callUnary } from "@prefix-guard/grpc";
import { silentLogger } from "@prefix-guard/logging";
import { CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
import { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import { LlmUsageEvent, type UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
import {
  CacheMonitorClient,
  type ListCollapsesResponse,
  type RawProviderUsage,
  type RecordUsageRequest,
  type RecordUsageResponse,
  type TraceSessionResponse,
} from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { defaultTopicSpecs } from "@prefix-guard/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCacheMonitorConfig, type RunningCacheMonitor, startCacheMonitor } from "../src/index";

const T_13_00 = Date.UTC(2026, 9, 14, 5, 0, 0);
const RULES_CAUSE = "new workspace-rules snapshot pinned (AGENTS.md edited by session 818)";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function usage(requestId: string, calledAtMs: number, overrides: Partial<UsageRecorded> = {}): UsageRecorded {
  return {
    requestId,
    model: "glm-4.6",
    promptTokens: 450_000,
    cachedTokens: 449_100,
    completionTokens: 600,
    cacheCreationTokens: 0,
    provider: "zhipu",
    calledAtMs,
    ...overrides,
  };
}

function observedEvent(sessionId: string, requestId: string, firstBuild: boolean): Uint8Array {
  return encodeEnvelope(PrefixEvent, {
    eventId: `obs-${sessionId}-${requestId}`,
    sessionId,
    requestId,
    occurredAtMs: Date.now(),
    schemaVersion: 1,
    type: "FingerprintObserved",
    payload: {
      $case: "observed",
      value: {
        sections: [{ key: "workspace-rules", sha256: `${requestId}`.padEnd(64, "0"), chars: 15_169 }],
        toolsHash: "t".repeat(64),
        historyHash: "h".repeat(64),
        messages: 478,
        firstBuild,
        rulesDecision: firstBuild ? "PINNED" : "RETAINED",
        dateNotices: [],
        anchorDate: "2026-10-14",
        estimatedTokens: 450_000,
        model: "glm-4.6",
        compactionGeneration: 0,
        compactionRequest: false,
        workspace: "/ws/oc_4fc3",
        cacheRetention: "",
        scope: "",
        owner: "",
      },
    },
  });
}

function rulesChangedEvent(sessionId: string, requestId: string): Uint8Array {
  return encodeEnvelope(PrefixEvent, {
    eventId: `chg-${sessionId}-${requestId}`,
    sessionId,
    requestId,
    occurredAtMs: Date.now(),
    schemaVersion: 1,
    type: "PrefixChanged",
    payload: {
      $case: "changed",
      value: {
        changedSections: ["workspace-rules"],
        toolsChanged: false,
        toolsChangeKind: "none",
        historyRewritten: false,
        cause: RULES_CAUSE,
        bytesAfterBreak: 1_800_000,
        tokensAfterBreak: 444_993,
        messages: 478,
      },
    },
  });
}

const NO_IDENTITY = { idempotencyKey: "", providerResponseId: "", unbuilt: false } as const;

describe("cache-monitor over gRPC on the embedded bus", () => {
  let busDb: Database;
  let bus: MessageBus;
  let mariadb: TestDatabase;
  let running: RunningCacheMonitor;
  let client: CacheMonitorClient;
  let metricsPort: number;
  const seen: Record<string, IncomingMessage[]> = {};
  const stops: Array<() => Promise<void>> = [];

  const rpc = {
    recordUsage: (sessionId: string, u: UsageRecorded | undefined, identity: Partial<RecordUsageRequest> = {}) =>
      callUnary<RecordUsageRequest, RecordUsageResponse>(
        client,
        client.recordUsage,
        { ...NO_IDENTITY, sessionId, usage: u, ...identity },
        { deadlineMs: 10_000 },
      ),
    // No raw-usage test builds its request: each says so (unbuilt).
    recordRawUsage: (sessionId: string, raw: RawProviderUsage, typed?: UsageRecorded) =>
      callUnary<RecordUsageRequest, RecordUsageResponse>(
        client,
        client.recordUsage,
        { ...NO_IDENTITY, sessionId, usage: typed, raw, unbuilt: true },
        { deadlineMs: 10_000 },
      ),
    listCollapses: (sessionId: string) =>
      callUnary<{ sinceMs: number; sessionId: string; limit: number }, ListCollapsesResponse>(
        client,
        client.listCollapses,
        { sinceMs: 0, sessionId, limit: 50 },
        { deadlineMs: 10_000 },
      ),
    traceSession: (sessionId: string) =>
      callUnary<{ sessionId: string; limit: number }, TraceSessionResponse>(
        client,
        client.traceSession,
        { sessionId, limit: 0 },
        { deadlineMs: 10_000 },
      ),
  };

  async function publishPrefix(sessionId: string, values: Uint8Array[]): Promise<void> {
    await bus.publish(
      Topics.promptPrefix,
      values.map((value) => ({ key: sessionId, value })),
    );
  }

  async function count(table: string, where: Record<string, unknown> = {}): Promise<number> {
    const [row] = await mariadb.db(table).where(where).count({ n: "*" });
    return Number(row?.n);
  }

  /** Five normal calls (a cold first, then ~99.8% cached), each with its build's fingerprint already consumed. */
  async function normalSession(sessionId: string): Promise<void> {
    await publishPrefix(
      sessionId,
      [1, 2, 3, 4, 5].map((i) => observedEvent(sessionId, `r${i}`, i === 1)),
    );
    await eventually(async () => (await count("cm_prefix_observation", { session_id: sessionId })) === 5, {
      what: `fingerprints of ${sessionId}`,
    });
    for (let i = 1; i <= 5; i++) {
      const response = await rpc.recordUsage(
        sessionId,
        usage(`r${i}`, T_13_00 + i * 60_000, { cachedTokens: i === 1 ? 0 : 449_100 }),
      );
      expect(response.collapse).toBeUndefined();
    }
  }

  beforeAll(async () => {
    busDb = createMemoryDatabase();
    await runMigrations(busDb, embeddedBusMigrations);
    bus = createEmbeddedBus({ db: busDb, logger: silentLogger(), pollIntervalMs: 20 });
    await bus.ensureTopics(defaultTopicSpecs(2));
    for (const topic of [Topics.cacheCollapse, Topics.llmUsage, `${Topics.promptPrefix}.dlq`]) {
      seen[topic] = [];
      const subscription = await bus.subscribe({
        topic,
        groupId: `test-observer-${topic}`,
        handleMessage: async (message) => {
          seen[topic]?.push(message);
        },
      });
      stops.push(() => subscription.stop());
    }
    mariadb = await createTestDatabase("cache_monitor_svc");
    metricsPort = await freePort();
    running = await startCacheMonitor(
      loadCacheMonitorConfig({
        GRPC_PORT: "0",
        DATABASE_URL: mariadb.url,
        LOG_LEVEL: "silent",
        METRICS_PORT: String(metricsPort),
        USAGE_BUILD_WAIT_MS: "1000",
      }),
      { bus, logger: silentLogger() },
    );
    client = new CacheMonitorClient(running.address, credentials.createInsecure());
  });

  afterAll(async () => {
    client?.close();
    await running?.stop();
    for (const stop of stops) await stop();
    await bus?.close();
    await busDb?.destroy();
    await mariadb?.drop();
  });

  it("waits for the build events of a RecordUsage that overtook them, then names workspace-rules, the cause and the extra cost", async () => {
    const session = "811";
    await normalSession(session);
    const recording = rpc.recordUsage(
      session,
      usage("r6", Date.UTC(2026, 9, 14, 5, 11, 11, 539), {
        promptTokens: 453_569,
        cachedTokens: 8_576,
        completionTokens: 621,
      }),
    );
    // The harness's usage is ahead of its build's FingerprintObserved on Kafka.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await count("cm_usage", { session_id: session, request_id: "r6" })).toBe(0);
    // The change first: the observation wakes the waiting RecordUsage, which then joins both.
    await publishPrefix(session, [rulesChangedEvent(session, "r6"), observedEvent(session, "r6", false)]);
    const collapse = await recording;
    expect(collapse.cost).toBeCloseTo(0.8953, 4);
    expect(collapse.collapse).toMatchObject({
      requestId: "r6",
      cause: RULES_CAUSE,
      changedSections: ["workspace-rules"],
      causeCode: "section_changed:workspace-rules",
    });

    const listed = await eventually(
      async () => {
        const response = await rpc.listCollapses(session);
        return response.collapses[0]?.collapse?.changedSections.includes("workspace-rules") ? response : undefined;
      },
      { what: "collapse joined with PrefixChanged" },
    );
    expect(listed.totalCollapses).toBe(1);
    const joined = listed.collapses[0]?.collapse;
    expect(listed.collapses[0]?.sessionId).toBe(session);
    expect(joined).toMatchObject({
      cause: RULES_CAUSE,
      attribution: "none",
      promptTokens: 453_569,
      cachedTokens: 8_576,
    });
    expect(joined?.baselineRatio).toBeCloseTo(449_100 / 450_000, 6);
    // 453,569 at the norm (99.8%): 907 × 2 + 452,662 × 0.04 + 621 × 8 per million = 0.024888
    expect(joined?.expectedCost).toBeCloseTo(0.024888, 5);
    expect(joined?.extraCost).toBeCloseTo(0.8953 - 0.024888, 4);
    expect(listed.totals.map((t) => [t.section, t.collapses])).toEqual([["workspace-rules", 1]]);
    expect(listed.totalExtraCost).toBeCloseTo(joined?.extraCost ?? 0, 9);

    // cache.collapse.v1 carries the detection and then the joined explanation.
    const published = await eventually(
      () => {
        const events = (seen[Topics.cacheCollapse] ?? [])
          .filter((m) => m.key === session)
          .map((m) => CacheCollapseEvent.decode(m.value));
        return events.some((e) => e.payload?.value.changedSections.includes("workspace-rules")) ? events : undefined;
      },
      { what: "collapse events on cache.collapse.v1" },
    );
    expect(published[0]).toMatchObject({ type: "CacheCollapsed", schemaVersion: 1, sessionId: session });
    expect(published.at(-1)?.payload?.value).toMatchObject({
      cause: RULES_CAUSE,
      attribution: "none",
      causeCode: "section_changed:workspace-rules",
      causeDisagreement: "",
    });
    expect(listed.causeTotals).toMatchObject([
      { causeCode: "section_changed:workspace-rules", collapses: 1, extraCost: listed.totalExtraCost },
    ]);

    const trace = await rpc.traceSession(session);
    expect(trace.builds.map((b) => [b.requestId, b.firstBuild, b.prefixChanged, b.collapsed])).toEqual([
      ["r1", true, false, false],
      ["r2", false, false, false],
      ["r3", false, false, false],
      ["r4", false, false, false],
      ["r5", false, false, false],
      ["r6", false, true, true],
    ]);
    expect(trace.builds.at(-1)).toMatchObject({
      changedSections: ["workspace-rules"],
      attribution: "agree",
      hasUsage: true,
    });
  });

  it("publishes each RecordUsage on llm.usage.v1 once and does not record its own echo again", async () => {
    const published = await eventually(
      () => {
        const events = (seen[Topics.llmUsage] ?? []).filter((m) => m.key === "811");
        return events.length >= 6 ? events : undefined;
      },
      { what: "usages on llm.usage.v1" },
    );
    const decoded = published.map((m) => LlmUsageEvent.decode(m.value));
    expect(new Set(decoded.map((e) => e.payload?.value.requestId))).toEqual(
      new Set(["r1", "r2", "r3", "r4", "r5", "r6"]),
    );
    await eventually(async () => (await count("outbox_message", { published_at_ms: null })) === 0, {
      what: "outbox drained",
    });
    expect(await count("cm_usage", { session_id: "811" })).toBe(6);
  });

  it("refuses a bad RecordUsage with INVALID_ARGUMENT naming the field, and stores nothing", async () => {
    const tables = ["cm_usage", "cm_session", "cm_collapse", "outbox_message"];
    const before = await Promise.all(tables.map((t) => count(t)));
    const cases: Array<[string, string, UsageRecorded | undefined]> = [
      ["usage.cached_tokens", "s-bad", usage("b1", T_13_00, { cachedTokens: 450_001 })],
      ["usage.request_id", "s-bad", usage("", T_13_00)],
      ["usage.model", "s-bad", usage("b1", T_13_00, { model: "" })],
      ["session_id", "", usage("b1", T_13_00)],
      ["usage", "s-bad", undefined],
    ];
    for (const [field, sessionId, u] of cases) {
      const error = (await rpc.recordUsage(sessionId, u).catch((e: unknown) => e)) as ServiceError;
      expect(error.code).toBe(status.INVALID_ARGUMENT);
      expect(error.details).toContain(field);
      expect((error.metadata ?? new Metadata()).get("pg-field")).toEqual([field]);
    }
    expect(await Promise.all(tables.map((t) => count(t)))).toEqual(before);
  });

  it("records a provider's usage object verbatim (Anthropic, OpenAI), normalized, priced and stored with its currency", async () => {
    const session = "raw-1";
    const anthropicResponse = JSON.stringify({
      id: "msg_01",
      type: "message",
      diagnostics: { cache_miss_reason: { type: "system_changed", cache_missed_input_tokens: 44_800 } },
      usage: {
        input_tokens: 312,
        cache_creation_input_tokens: 45_000,
        cache_read_input_tokens: 2_048,
        cache_creation: { ephemeral_5m_input_tokens: 5_000, ephemeral_1h_input_tokens: 40_000 },
        output_tokens: 503,
      },
    });
    const anthropic = await rpc.recordRawUsage(session, {
      provider: "anthropic",
      usageJson: anthropicResponse,
      requestId: "ra1",
      model: "claude-sonnet-4-5",
      calledAtMs: T_13_00,
    });
    // Seed prices (no write price: writes cost the input price): 45,312 × 2 + 2,048 × 0.04 + 503 × 8 per million
    expect(anthropic.cost).toBeCloseTo((45_312 * 2 + 2_048 * 0.04 + 503 * 8) / 1_000_000, 9);
    const openai = await rpc.recordRawUsage(session, {
      provider: "openai_chat",
      usageJson: JSON.stringify({
        prompt_tokens: 2_006,
        completion_tokens: 300,
        total_tokens: 2_306,
        prompt_tokens_details: { cached_tokens: 1_920 },
      }),
      requestId: "ro1",
      model: "gpt-4o",
      calledAtMs: T_13_00 + 60_000,
      reportedCost: 0.0042,
    });
    expect(openai.cost).toBe(0.0042);

    const trace = await rpc.traceSession(session);
    const byRequest = new Map(trace.builds.map((b) => [b.requestId, b]));
    expect(byRequest.get("ra1")?.usage).toMatchObject({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      promptTokens: 47_360,
      cachedTokens: 2_048,
      cacheCreationTokens: 45_000,
      cacheCreation1hTokens: 40_000,
      completionTokens: 503,
      providerReport: { cacheMissReason: "system_changed", cacheReadInputTokens: 2_048 },
    });
    expect(byRequest.get("ro1")?.usage).toMatchObject({
      provider: "openai_chat",
      promptTokens: 2_006,
      cachedTokens: 1_920,
      completionTokens: 300,
      reportedCost: 0.0042,
      providerReport: { openaiCachedTokens: 1_920 },
    });
    const rows = await mariadb.db("cm_usage").where({ session_id: session }).orderBy("called_at_ms");
    expect(rows.map((r) => [r.request_id, r.currency, Number(r.cache_creation_1h_tokens)])).toEqual([
      ["ra1", "CNY", 40_000],
      ["ro1", "CNY", 0],
    ]);

    // The same raw usage again is the same call: found, not billed twice.
    await rpc.recordRawUsage(session, {
      provider: "anthropic",
      usageJson: anthropicResponse,
      requestId: "ra1",
      model: "claude-sonnet-4-5",
      calledAtMs: T_13_00,
    });
    expect(await count("cm_usage", { session_id: session })).toBe(2);
  });

  it("refuses a bad raw usage with INVALID_ARGUMENT naming the field, and stores nothing", async () => {
    const tables = ["cm_usage", "cm_session", "cm_collapse", "outbox_message"];
    const before = await Promise.all(tables.map((t) => count(t)));
    const raw = (provider: string, usageJson: string): RawProviderUsage => ({
      provider,
      usageJson,
      requestId: "rb1",
      model: "claude-sonnet-4-5",
      calledAtMs: T_13_00,
    });
    const cases: Array<[string, RawProviderUsage, UsageRecorded | undefined]> = [
      ["raw.provider", raw("mistral", '{"input_tokens":1,"output_tokens":1}'), undefined],
      ["raw.usage_json", raw("anthropic", "{not json"), undefined],
      ["raw.usage_json.usage.input_tokens", raw("anthropic", '{"usage":{"output_tokens":1}}'), undefined],
      ["raw.usage_json.output_tokens", raw("anthropic", '{"input_tokens":5,"output_tokens":-1}'), undefined],
      ["raw.model", { ...raw("anthropic", '{"input_tokens":5,"output_tokens":1}'), model: "" }, undefined],
      ["raw", raw("anthropic", '{"input_tokens":5,"output_tokens":1}'), usage("rb1", T_13_00)],
    ];
    for (const [field, r, typed] of cases) {
      const error = (await rpc.recordRawUsage("s-bad-raw", r, typed).catch((e: unknown) => e)) as ServiceError;
      expect(error.code).toBe(status.INVALID_ARGUMENT);
      expect((error.metadata ?? new Metadata()).get("pg-field")).toEqual([field]);
    }
    expect(await Promise.all(tables.map((t) => count(t)))).toEqual(before);
  });

  it("attributes a provider-reported miss behind an unchanged prefix to the provider", async () => {
    const session = "797";
    await normalSession(session);
    await publishPrefix(session, [observedEvent(session, "r6", false)]);
    await eventually(async () => (await count("cm_prefix_observation", { session_id: session })) === 6, {
      what: "fingerprint of r6",
    });
    const response = await rpc.recordUsage(
      session,
      usage("r6", T_13_00 + 18 * 3_600_000, {
        cachedTokens: 0,
        providerReport: {
          cacheMissReason: "cache entry expired (ttl)",
          cacheReadInputTokens: 0,
          cacheCreationInputTokens: 450_000,
          openaiCachedTokens: 0,
          rawJson: '{"cache_miss_reason":"ttl"}',
        },
      }),
    );
    expect(response.collapse).toMatchObject({
      attribution: "provider_only",
      changedSections: [],
      providerCacheMissReason: "cache entry expired (ttl)",
    });
    expect(response.collapse?.cause).toContain("our prefix unchanged");
    const listed = await rpc.listCollapses(session);
    expect(listed.totals.map((t) => t.section)).toEqual(["(none)"]);
  });

  it("records a usage published straight on llm.usage.v1 and dead-letters undecodable prefix events", async () => {
    await bus.publish(Topics.llmUsage, [
      {
        key: "topic-session",
        value: encodeEnvelope(LlmUsageEvent, {
          eventId: "harness-usage-1",
          sessionId: "topic-session",
          occurredAtMs: Date.now(),
          schemaVersion: 1,
          type: "UsageRecorded",
          payload: { $case: "usage", value: usage("t1", T_13_00) },
        }),
      },
    ]);
    const trace = await eventually(
      async () => {
        const response = await rpc.traceSession("topic-session");
        return response.builds.length > 0 ? response : undefined;
      },
      { what: "usage from the topic" },
    );
    expect(trace.builds[0]).toMatchObject({ requestId: "t1", hasUsage: true, attribution: "unknown" });
    expect(await count("cm_usage", { session_id: "topic-session", source: "topic" })).toBe(1);

    await bus.publish(Topics.promptPrefix, [{ key: "x", value: new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f]) }]);
    const dead = await eventually(() => seen[`${Topics.promptPrefix}.dlq`]?.[0], { what: "DLQ message" });
    expect(dead.headers["pg-dlq-reason"]).toBe("undecodable");
  });

  it("exposes calls, tokens, cached ratio, collapses by section and cause, and extra cost on /metrics", async () => {
    expect(running.metricsPort).toBe(metricsPort);
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    // glm-4.6 is in no catalogue family and has no price of its own: its family is "other", never the raw name.
    expect(text).not.toContain('model_family="glm-4.6"');
    expect(text).toMatch(
      /prefixguard_llm_calls_total\{(?=[^}]*model_family="other")(?=[^}]*intake="rpc")(?=[^}]*source="prompt-assembly")(?=[^}]*service="cache-monitor")[^}]*\} 12/,
    );
    expect(text).toMatch(
      /prefixguard_llm_calls_total\{(?=[^}]*model_family="other")(?=[^}]*intake="topic")(?=[^}]*source="prompt-assembly")(?=[^}]*service="cache-monitor")[^}]*\} 1/,
    );
    const counterValue = (name: string) =>
      Number(new RegExp(`${name}\\{(?=[^}]*model_family="other")[^}]*\\} ([0-9.e+]+)`).exec(text)?.[1]);
    expect(counterValue("prefixguard_prompt_tokens_total")).toBeGreaterThan(
      counterValue("prefixguard_cached_tokens_total"),
    );
    expect(counterValue("prefixguard_cached_tokens_total")).toBeGreaterThan(0);
    // 811's collapse waited for its build's events and was named at once; 797's behind an unchanged prefix.
    expect(text).toMatch(
      /prefixguard_cache_collapses_total\{(?=[^}]*section="workspace-rules")(?=[^}]*cause="section_changed")(?=[^}]*service="cache-monitor")[^}]*\} 1/,
    );
    expect(text).toMatch(
      /prefixguard_cache_collapses_total\{(?=[^}]*section="\(none\)")(?=[^}]*cause="[a-z_]+")(?=[^}]*service="cache-monitor")[^}]*\} 1/,
    );
    // ≤ 1%: both cold first calls and 797's miss; ≤ 5% adds 811's 1.9%.
    expect(text).toMatch(
      /prefixguard_cached_tokens_ratio_bucket\{(?=[^}]*model_family="other")(?=[^}]*le="0\.01")(?=[^}]*service="cache-monitor")[^}]*\} 3\n/,
    );
    expect(text).toMatch(
      /prefixguard_cached_tokens_ratio_bucket\{(?=[^}]*model_family="other")(?=[^}]*le="0\.05")(?=[^}]*service="cache-monitor")[^}]*\} 4\n/,
    );
    const extra = [
      ...text.matchAll(
        /prefixguard_collapse_extra_cost_total\{(?=[^}]*currency="[^"]+")(?=[^}]*service="cache-monitor")[^}]*\} ([0-9.e-]+)/g,
      ),
    ].reduce((sum, match) => sum + Number(match[1]), 0);
    expect(extra).toBeGreaterThan(1.5);
    // The event-pipeline series every service shares (README "Metrics and traces").
    expect(text).toMatch(
      /prefixguard_events_consumed_total\{(?=[^}]*consumer="[^"]*\.prefix")(?=[^}]*outcome="dead_lettered")(?=[^}]*service="cache-monitor")[^}]*\} 1/,
    );
    expect(text).toMatch(
      /prefixguard_event_apply_delay_seconds_count\{(?=[^}]*consumer="[^"]*\.(prefix|usage)")[^}]*\} [1-9]/,
    );
    expect(text).toMatch(/prefixguard_relay_backlog_events\{[^}]*service="cache-monitor"[^}]*\} \d/);
    expect(text).not.toMatch(/^cache_monitor_/m);
    expect(text).toContain("process_cpu_user_seconds_total");
  });

  // After the metrics test: these calls would change its counts.
  it("answers a retried RecordUsage with the stored answer, and names the field of a reused key or an unbuilt request", async () => {
    const session = "s-retry";
    await publishPrefix(session, [observedEvent(session, "q1", true)]);
    const call = usage("q1", T_13_00, { cachedTokens: 0 });
    const first = await rpc.recordUsage(session, call, { providerResponseId: "msg_q1" });
    expect(first).toMatchObject({ duplicate: false, idempotencyKey: "q1:msg_q1" });
    const retry = await rpc.recordUsage(session, call, { providerResponseId: "msg_q1" });
    expect(retry).toEqual({ ...first, duplicate: true });
    expect(await count("cm_usage", { session_id: session })).toBe(1);

    const fieldOf = (error: ServiceError) => (error.metadata ?? new Metadata()).get("pg-field");
    const reused = (await rpc
      .recordUsage(session, { ...call, completionTokens: 1 }, { providerResponseId: "msg_q1" })
      .catch((e: unknown) => e)) as ServiceError;
    expect(reused.code).toBe(status.ALREADY_EXISTS);
    expect(fieldOf(reused)).toEqual(["idempotency_key"]);

    const unbuilt = (await rpc.recordUsage(session, usage("q-none", T_13_00)).catch((e: unknown) => e)) as ServiceError;
    expect(unbuilt.code).toBe(status.FAILED_PRECONDITION);
    expect(fieldOf(unbuilt)).toEqual(["request_id"]);
    expect((unbuilt.metadata ?? new Metadata()).get("pg-reason")).toEqual(["request_not_built"]);
    expect(await count("cm_usage", { session_id: session })).toBe(1);
    expect(await rpc.recordUsage(session, usage("q-none", T_13_00), { unbuilt: true })).toMatchObject({
      duplicate: false,
    });
    expect(await count("cm_usage", { session_id: session })).toBe(2);
  });
});
