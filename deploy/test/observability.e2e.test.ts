// One harness turn, followed by its trace (in-memory exporter) and by the services' /metrics.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { context, SpanKind, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { eventually } from "@prefix-guard/bus/testing";
import { callUnary } from "@prefix-guard/grpc";
import { type PromptAssemblyClient, WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import type { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { startTelemetry } from "@prefix-guard/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { mainSessionRequest, userTextMessage } from "./support";

const basePort = 39_100 + Math.floor(Math.random() * 800);

describe("observability of one harness turn", () => {
  const exporter = new InMemorySpanExporter();
  const telemetry = startTelemetry({ serviceName: "observability-test", exporter });
  let stack: Stack | undefined;
  let sessions: SessionEventsClient;
  let assembly: PromptAssemblyClient;
  let workspace: string;

  beforeAll(async () => {
    const metricsPort = (port: number) => ({ METRICS_PORT: String(port) });
    stack = await startStack({
      serviceEnv: {
        "session-events": metricsPort(basePort),
        "rules-snapshot": metricsPort(basePort + 1),
        "prompt-assembly": metricsPort(basePort + 2),
      },
    });
    sessions = stack.sessions;
    assembly = stack.assembly();
    workspace = mkdtempSync(join(tmpdir(), "pg-obs-"));
    writeFileSync(join(workspace, "AGENTS.md"), "# Rules\n- be brief\n");
  });
  afterAll(async () => {
    await stack?.stop();
    await telemetry.shutdown();
  });

  it("follows SaveMessage through the relay to both consumers, and BuildRequest into Resolve, in one trace", async () => {
    const tracer = trace.getTracer("harness");
    const root = tracer.startSpan("harness turn", { kind: SpanKind.CLIENT });
    const traceId = root.spanContext().traceId;
    await context.with(trace.setSpan(context.active(), root), async () => {
      const md = { deadlineMs: 5_000 };
      await callUnary(sessions, sessions.createSession, mainSessionRequest("obs-1", workspace, { owner: "u" }), md);
      const saved = await callUnary(sessions, sessions.saveMessage, userTextMessage("obs-1", "hello"), md);
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
    expect(se).toMatch(/prefixguard_relay_backlog_events\S* 0/);
    expect(se).toMatch(/prefixguard_relay_events_published_total\S* [1-9]/);
    expect(se).toMatch(
      /prefixguard_grpc_server_handling_seconds_count\{(?=[^}]*grpc_method="SaveMessage")(?=[^}]*grpc_code="OK")(?=[^}]*grpc_service="prefixguard\.sessionevents\.v1\.SessionEvents")(?=[^}]*service="session-events")[^}]*\}/,
    );
    const rs = await scrape(basePort + 1);
    expect(rs).toMatch(/prefixguard_rules_decisions_total\{[^}]*decision="PINNED"[^}]*\} 1/);
    expect(rs).toMatch(/prefixguard_event_apply_delay_seconds_count\{[^}]*consumer="rules-snapshot"/);
    const pa = await scrape(basePort + 2);
    expect(pa).toMatch(/prefixguard_builds_total\{[^}]*wire_format="openai_chat"[^}]*\} 1/);
    expect(pa).toMatch(/prefixguard_events_consumed_total\{[^}]*outcome="applied"/);
  });
});
