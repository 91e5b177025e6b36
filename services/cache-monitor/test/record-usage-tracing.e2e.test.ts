// Every RecordUsage — over gRPC or from llm.usage.v1 — runs in a span carrying the OpenTelemetry
// GenAI usage attributes, under the RPC's (or the consumer's) span, through the real SDK pipeline.
import { credentials, type ServiceError, status } from "@grpc/grpc-js";
import { SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { createEmbeddedBus, embeddedBusMigrations, type MessageBus } from "@prefix-guard/bus";
import { eventually } from "@prefix-guard/bus/testing";
import { type Database, runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase } from "@prefix-guard/db/testing";
import { encodeEnvelope, Topics } from "@prefix-guard/events";
import { callUnary } from "@prefix-guard/grpc";
import { silentLogger } from "@prefix-guard/logging";
import { LlmUsageEvent, type UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
import {
  CacheMonitorClient,
  type RecordUsageRequest,
  type RecordUsageResponse,
} from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { defaultTopicSpecs } from "@prefix-guard/runtime";
import { startTelemetry, type Telemetry } from "@prefix-guard/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCacheMonitorConfig, type RunningCacheMonitor, startCacheMonitor } from "../src/index";

type FinishedSpan = ReadableSpan;

function parentSpanIdOf(span: FinishedSpan): string | undefined {
  const withParent = span as FinishedSpan & { parentSpanContext?: { spanId: string }; parentSpanId?: string };
  return withParent.parentSpanContext?.spanId ?? withParent.parentSpanId;
}

function usage(requestId: string, overrides: Partial<UsageRecorded> = {}): UsageRecorded {
  return {
    requestId,
    model: "claude-sonnet-4-5",
    promptTokens: 120_000,
    cachedTokens: 100_000,
    completionTokens: 900,
    cacheCreationTokens: 15_000,
    provider: "anthropic",
    calledAtMs: Date.UTC(2026, 9, 14, 5, 0, 0),
    ...overrides,
  };
}

describe("RecordUsage spans", () => {
  const exporter = new InMemorySpanExporter();
  const finished = () => exporter.getFinishedSpans();
  let telemetry: Telemetry;
  let busDb: Database;
  let bus: MessageBus;
  let running: RunningCacheMonitor;
  let client: CacheMonitorClient;

  const recordUsage = (sessionId: string, u: UsageRecorded) =>
    // These spans are about the usage, not its build: no build is published here.
    callUnary<RecordUsageRequest, RecordUsageResponse>(
      client,
      client.recordUsage,
      { sessionId, usage: u, idempotencyKey: "", providerResponseId: "", unbuilt: true },
      { deadlineMs: 10_000 },
    );

  beforeAll(async () => {
    telemetry = startTelemetry({ serviceName: "cache-monitor-test", exporter });
    busDb = createMemoryDatabase();
    await runMigrations(busDb, embeddedBusMigrations);
    bus = createEmbeddedBus({ db: busDb, logger: silentLogger(), pollIntervalMs: 20 });
    await bus.ensureTopics(defaultTopicSpecs(1));
    running = await startCacheMonitor(
      loadCacheMonitorConfig({ GRPC_PORT: "0", DATABASE_URL: "sqlite::memory:", LOG_LEVEL: "silent" }),
      { bus, logger: silentLogger() },
    );
    client = new CacheMonitorClient(running.address, credentials.createInsecure());
  });

  afterAll(async () => {
    client?.close();
    await running?.stop();
    await bus?.close();
    await busDb?.destroy();
    await telemetry?.shutdown();
  });

  it("carries the GenAI usage attributes, inside the RecordUsage server span", async () => {
    await recordUsage("s-trace", usage("req-1"));
    const span = await eventually(() => finished().find((s) => s.attributes["prefix_guard.request_id"] === "req-1"), {
      what: "record_usage span",
    });
    expect(span.name).toBe("chat claude-sonnet-4-5");
    expect(span.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "claude-sonnet-4-5",
      "gen_ai.conversation.id": "s-trace",
      "gen_ai.usage.input_tokens": 120_000,
      "gen_ai.usage.cache_read.input_tokens": 100_000,
      "gen_ai.usage.cache_write.input_tokens": 15_000,
      "gen_ai.usage.output_tokens": 900,
      "gen_ai.provider.name": "anthropic",
      "session.id": "s-trace",
      "prefix_guard.usage.source": "rpc",
      "prefix_guard.cache.collapsed": false,
    });
    // The pre-2026 name is gone, not kept beside the new one.
    expect(span.attributes).not.toHaveProperty("gen_ai.usage.cache_creation.input_tokens");
    expect(span.status.code).not.toBe(SpanStatusCode.ERROR);
    // The server span ends right after the answer is sent, so it may be exported after the reply arrives.
    const server = await eventually(
      () =>
        finished().find(
          (s) =>
            s.name === "prefixguard.monitor.v1.CacheMonitor/RecordUsage" &&
            s.spanContext().spanId === parentSpanIdOf(span),
        ),
      { what: "the RecordUsage server span as parent" },
    );
    expect(server.attributes["rpc.grpc.status_code"]).toBe(status.OK);
    expect(span.spanContext().traceId).toBe(server.spanContext().traceId);
  });

  it("names a raw provider usage's span the same way, with its cache writes under the current names", async () => {
    await callUnary<RecordUsageRequest, RecordUsageResponse>(
      client,
      client.recordUsage,
      {
        idempotencyKey: "",
        providerResponseId: "",
        unbuilt: true,
        sessionId: "s-raw",
        raw: {
          provider: "anthropic",
          requestId: "req-raw",
          model: "claude-opus-4-1",
          calledAtMs: Date.UTC(2026, 9, 14, 5, 0, 0),
          usageJson: JSON.stringify({
            input_tokens: 40,
            cache_read_input_tokens: 9_000,
            cache_creation_input_tokens: 3_000,
            cache_creation: { ephemeral_5m_input_tokens: 1_000, ephemeral_1h_input_tokens: 2_000 },
            output_tokens: 12,
          }),
        },
      },
      { deadlineMs: 10_000 },
    );
    const span = await eventually(() => finished().find((s) => s.attributes["prefix_guard.request_id"] === "req-raw"), {
      what: "raw record span",
    });
    expect(span.name).toBe("chat claude-opus-4-1");
    expect(span.attributes).toMatchObject({
      "gen_ai.conversation.id": "s-raw",
      "gen_ai.usage.input_tokens": 12_040,
      "gen_ai.usage.cache_read.input_tokens": 9_000,
      "gen_ai.usage.cache_write.input_tokens": 3_000,
      "prefix_guard.usage.cache_write_1h.input_tokens": 2_000,
      "prefix_guard.usage.intake": "raw",
    });
  });

  it("marks a refused usage as an error span that still names what was sent", async () => {
    const error = (await recordUsage("s-trace", usage("req-bad", { cachedTokens: 130_000 })).catch(
      (e: unknown) => e,
    )) as ServiceError;
    expect(error.code).toBe(status.INVALID_ARGUMENT);
    const span = await eventually(() => finished().find((s) => s.attributes["prefix_guard.request_id"] === "req-bad"), {
      what: "failed record_usage span",
    });
    expect(span.name).toBe("chat claude-sonnet-4-5");
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.status.message).toContain("usage.cached_tokens");
    expect(span.attributes["gen_ai.usage.cache_read.input_tokens"]).toBe(130_000);
    expect(span.events.map((e) => e.name)).toContain("exception");
  });

  it("traces a usage consumed from llm.usage.v1 under the consumer's span", async () => {
    await bus.publish(Topics.llmUsage, [
      {
        key: "s-topic",
        value: encodeEnvelope(LlmUsageEvent, {
          eventId: "harness-evt-1",
          sessionId: "s-topic",
          occurredAtMs: Date.now(),
          schemaVersion: 1,
          type: "UsageRecorded",
          payload: { $case: "usage", value: usage("req-topic", { model: "glm-4.6", cacheCreationTokens: 0 }) },
        }),
      },
    ]);
    const span = await eventually(
      () => finished().find((s) => s.attributes["prefix_guard.request_id"] === "req-topic"),
      { what: "record_usage span from the topic" },
    );
    expect(span.name).toBe("chat glm-4.6");
    expect(span.attributes).toMatchObject({
      "gen_ai.request.model": "glm-4.6",
      "gen_ai.conversation.id": "s-topic",
      "gen_ai.usage.input_tokens": 120_000,
      "gen_ai.usage.cache_write.input_tokens": 0,
      "prefix_guard.usage.source": "topic",
    });
    // The consumer span ends after the apply it wraps, so it is exported after its child.
    const consumer = await eventually(
      () =>
        finished().find(
          (s) => s.name === `${Topics.llmUsage} process` && s.spanContext().spanId === parentSpanIdOf(span),
        ),
      { what: "the llm.usage.v1 consumer span as parent" },
    );
    expect(consumer.attributes["messaging.destination.name"]).toBe(Topics.llmUsage);
  });
});
