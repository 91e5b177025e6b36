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
import { counterTotal, mainSessionRequest, scrapeMetricsUntil, userTextMessage } from "./support";

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
    // A server span ends after its answer is sent, and a consumer's once the relay published and it
    // applied: the trace is complete only when every span the turn makes has ended.
    const spans = await spansOfTurn(inTrace, {
      "prefixguard.sessionevents.v1.SessionEvents/SaveMessage": 1,
      "prefixguard.assembly.v1.PromptAssembly/BuildRequest": 1,
      "prefixguard.rules.v1.RulesSnapshot/Resolve": 1,
      // SessionCreated and MessageSaved, each applied by both consumer groups.
      "session.events.v1 process (rules-snapshot)": 2,
      "session.events.v1 process (prompt-assembly)": 2,
    });
    const build = spans.find((s) => s.name === "prefixguard.assembly.v1.PromptAssembly/BuildRequest");
    const resolve = spans.find((s) => s.name === "prefixguard.rules.v1.RulesSnapshot/Resolve");
    expect(resolve?.parentSpanContext?.spanId).toBe(build?.spanContext().spanId);
    const groups = new Set(
      spans
        .filter((s) => s.name === "session.events.v1 process")
        .map((s) => s.attributes["messaging.consumer.group.name"]),
    );
    expect(groups).toEqual(new Set(["rules-snapshot", "prompt-assembly"]));
  });

  // The turn's two events (SessionCreated, MessageSaved) are published by the relay and applied by
  // the consumers after the calls answered, and a call is counted once it completed: each scrape
  // waits until its counters have counted the turn, then the turn is counted exactly.
  it("exposes Prometheus metrics per service", async () => {
    const published = "prefixguard_relay_events_published_total";
    const handled = "prefixguard_grpc_server_handling_seconds_count";
    const saveMessageOk = {
      grpc_service: "prefixguard.sessionevents.v1.SessionEvents",
      grpc_method: "SaveMessage",
      grpc_code: "OK",
      service: "session-events",
    };
    const se = await scrapeMetricsUntil(basePort, [
      { name: published, atLeast: 2 },
      { name: handled, labels: saveMessageOk },
    ]);
    expect(counterTotal(se, published)).toBe(2);
    // The backlog is counted from the outbox at scrape time, and the relay counts after marking rows published.
    expect(counterTotal(se, "prefixguard_relay_backlog_events")).toBe(0);
    expect(counterTotal(se, handled, saveMessageOk)).toBe(1);

    const decisions = "prefixguard_rules_decisions_total";
    const applyDelays = "prefixguard_event_apply_delay_seconds_count";
    const rulesConsumer = { consumer: "rules-snapshot" };
    const rs = await scrapeMetricsUntil(basePort + 1, [
      { name: decisions, labels: { decision: "PINNED" } },
      { name: applyDelays, labels: rulesConsumer, atLeast: 2 },
    ]);
    expect(counterTotal(rs, decisions, { decision: "PINNED" })).toBe(1);
    expect(counterTotal(rs, applyDelays, rulesConsumer)).toBe(2);

    const builds = "prefixguard_builds_total";
    const consumed = "prefixguard_events_consumed_total";
    const assemblyApplied = { consumer: "prompt-assembly", outcome: "applied" };
    const pa = await scrapeMetricsUntil(basePort + 2, [
      { name: builds, labels: { wire_format: "openai_chat" } },
      { name: consumed, labels: assemblyApplied, atLeast: 2 },
    ]);
    expect(counterTotal(pa, builds, { wire_format: "openai_chat" })).toBe(1);
    expect(counterTotal(pa, consumed, assemblyApplied)).toBe(2);
  });
});

/**
 * The spans of the trace once it holds at least `expected` of each name (a consumer's span named with
 * its group in parentheses), and exactly that many then. The timeout error names the spans still
 * short and every span the trace held.
 */
async function spansOfTurn(
  inTrace: () => ReadableSpan[],
  expected: Readonly<Record<string, number>>,
): Promise<ReadableSpan[]> {
  const nameOf = (span: ReadableSpan) => {
    const group = span.attributes["messaging.consumer.group.name"];
    return group === undefined ? span.name : `${span.name} (${String(group)})`;
  };
  const countsOf = (spans: readonly ReadableSpan[]) =>
    Object.fromEntries(Object.keys(expected).map((name) => [name, spans.filter((s) => nameOf(s) === name).length]));
  let spans: ReadableSpan[] = [];
  const short = () => Object.entries(countsOf(spans)).filter(([name, count]) => count < (expected[name] ?? 0));
  try {
    await eventually(
      () => {
        spans = inTrace();
        return short().length === 0;
      },
      { what: "the spans of the turn", timeoutMs: 15_000 },
    );
  } catch (error) {
    const missing = short().map(([name, count]) => `${name} at ${count}, wanted ${expected[name]}`);
    throw new Error(
      `${(error as Error).message}: ${missing.join("; ")}; the trace held [${spans.map(nameOf).join(", ")}]`,
    );
  }
  expect(countsOf(spans)).toEqual(expected);
  return spans;
}
