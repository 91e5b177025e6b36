// One harness turn, followed by its trace (in-memory exporter) and by the services' /metrics.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials } from "@grpc/grpc-js";
import { context, SpanKind, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { createEmbeddedBus, embeddedBusMigrations } from "@prefix-guard/bus";
import { eventually } from "@prefix-guard/bus/testing";
import { runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase } from "@prefix-guard/db/testing";
import { callUnary } from "@prefix-guard/grpc";
import { silentLogger } from "@prefix-guard/logging";
import { loadPromptAssemblyConfig, startPromptAssembly } from "@prefix-guard/prompt-assembly";
import { PromptAssemblyClient, WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { loadRulesSnapshotConfig, startRulesSnapshot } from "@prefix-guard/rules-snapshot";
import { defaultTopicSpecs } from "@prefix-guard/runtime";
import { loadSessionEventsConfig, startSessionEvents } from "@prefix-guard/session-events";
import { startTelemetry } from "@prefix-guard/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const basePort = 39_100 + Math.floor(Math.random() * 800);

describe("observability of one harness turn", () => {
  const exporter = new InMemorySpanExporter();
  const telemetry = startTelemetry({ serviceName: "observability-test", exporter });
  const busDb = createMemoryDatabase();
  let stops: Array<() => Promise<void>> = [];
  let sessions: SessionEventsClient;
  let assembly: PromptAssemblyClient;
  let workspace: string;

  beforeAll(async () => {
    await runMigrations(busDb, embeddedBusMigrations);
    const bus = createEmbeddedBus({ db: busDb, logger: silentLogger(), pollIntervalMs: 20 });
    await bus.ensureTopics(defaultTopicSpecs(2));
    const env = (metricsPort: number) => ({
      GRPC_PORT: "0",
      DATABASE_URL: "sqlite::memory:",
      METRICS_PORT: String(metricsPort),
    });
    const logger = silentLogger();
    const se = await startSessionEvents(loadSessionEventsConfig(env(basePort)), { bus, logger });
    const rs = await startRulesSnapshot(loadRulesSnapshotConfig(env(basePort + 1)), { bus, logger });
    const pa = await startPromptAssembly(
      loadPromptAssemblyConfig({
        ...env(basePort + 2),
        SESSION_EVENTS_ADDRESS: se.address,
        RULES_SNAPSHOT_ADDRESS: rs.address,
      }),
      { bus, logger },
    );
    stops = [pa.stop, rs.stop, se.stop, () => bus.close(), () => busDb.destroy(), () => telemetry.shutdown()];
    sessions = new SessionEventsClient(se.address, credentials.createInsecure());
    assembly = new PromptAssemblyClient(pa.address, credentials.createInsecure());
    workspace = mkdtempSync(join(tmpdir(), "pg-obs-"));
    writeFileSync(join(workspace, "AGENTS.md"), "# Rules\n- be brief\n");
  });
  afterAll(async () => {
    sessions.close();
    assembly.close();
    for (const stop of stops) await stop();
  });

  it("follows SaveMessage through the relay to both consumers, and BuildRequest into Resolve, in one trace", async () => {
    const tracer = trace.getTracer("harness");
    const root = tracer.startSpan("harness turn", { kind: SpanKind.CLIENT });
    const traceId = root.spanContext().traceId;
    await context.with(trace.setSpan(context.active(), root), async () => {
      const md = { deadlineMs: 5_000 };
      await callUnary(
        sessions,
        sessions.createSession,
        {
          sessionId: "obs-1",
          owner: "u",
          workspace,
          timezone: "Asia/Shanghai",
          kind: SessionKind.SESSION_KIND_MAIN,
          parentSessionId: "",
          continuedFromSessionId: "",
          personalTerms: [],
          locale: "",
        },
        md,
      );
      const saved = await callUnary(
        sessions,
        sessions.saveMessage,
        {
          sessionId: "obs-1",
          role: Role.ROLE_USER,
          content: [{ part: { $case: "text", value: { text: "hello" } } }],
          thinkingText: "",
        },
        md,
      );
      await callUnary(
        assembly,
        assembly.buildRequest,
        {
          sessionId: "obs-1",
          minSeq: saved.seq,
          sections: [{ key: "persona", text: "p" }],
          tools: [],
          wireFormat: WireFormat.WIRE_FORMAT_OPENAI_CHAT,
          model: "m",
          workspace,
          rulesSource: { $case: "rulesFile", value: { path: join(workspace, "AGENTS.md") } },
          embed: false,
          locale: "en",
        },
        md,
      );
    });
    root.end();
    const inTrace = () => exporter.getFinishedSpans().filter((s: ReadableSpan) => s.spanContext().traceId === traceId);
    await eventually(() => inTrace().filter((s) => s.name === "session.events.v1 process").length >= 4, {
      what: "consumer spans of both services for both events",
    });
    const names = inTrace().map((s) => s.name);
    expect(names).toContain("prefixguard.sessionevents.v1.SessionEvents/SaveMessage");
    expect(names).toContain("prefixguard.assembly.v1.PromptAssembly/BuildRequest");
    expect(names).toContain("prefixguard.rules.v1.RulesSnapshot/Resolve");
    const build = inTrace().find((s) => s.name === "prefixguard.assembly.v1.PromptAssembly/BuildRequest");
    const resolve = inTrace().find((s) => s.name === "prefixguard.rules.v1.RulesSnapshot/Resolve");
    expect(resolve?.parentSpanContext?.spanId).toBe(build?.spanContext().spanId);
    const groups = new Set(
      inTrace()
        .filter((s) => s.name === "session.events.v1 process")
        .map((s) => s.attributes["messaging.consumer.group.name"]),
    );
    expect(groups).toEqual(new Set(["rules-snapshot", "prompt-assembly"]));
  });

  it("exposes Prometheus metrics per service", async () => {
    const scrape = async (port: number) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const se = await scrape(basePort);
    expect(se).toMatch(/relay_backlog_events\S* 0/);
    expect(se).toMatch(/relay_events_published_total\S* [1-9]/);
    expect(se).toMatch(/grpc_server_handling_seconds_count\{[^}]*method="SaveMessage"[^}]*code="OK"/);
    const rs = await scrape(basePort + 1);
    expect(rs).toMatch(/rules_resolve_decisions_total\{[^}]*decision="PINNED"[^}]*\} 1/);
    expect(rs).toMatch(/event_apply_delay_seconds_count\{[^}]*consumer="rules-snapshot"/);
    const pa = await scrape(basePort + 2);
    expect(pa).toMatch(/prompt_builds_total\{[^}]*format="openai_chat"[^}]*\} 1/);
    expect(pa).toMatch(/events_consumed_total\{[^}]*outcome="applied"/);
  });
});
