import { eventually, uniqueName } from "@prefix-guard/bus/testing";
import { decodeEnvelope } from "@prefix-guard/events";
import { callUnary } from "@prefix-guard/grpc";
import {
  type BuildRequestRequest,
  type BuildRequestResponse,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
import type { UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
import type { RecordUsageResponse, TraceSessionResponse } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { freePort, mainSessionRequest, runPrefixctl, userTextMessage } from "./support";

const prefixctl = (argv: string[]) => runPrefixctl(argv);

let clock = Date.UTC(2026, 9, 14, 5, 0, 0);
const now = () => clock;
const deadline = { deadlineMs: 10_000 };
const SECTION_KEYS = ["persona", "tool-guide", "skills"];

describe("a provoked collapse's cause code in prefixctl, on Kafka and in /metrics", () => {
  const sessionId = uniqueName("cause");
  const collapseEvents: CacheCollapseEvent[] = [];
  let stack: Stack;
  let metricsPort: number;
  let stopObserver: () => Promise<void>;

  beforeAll(async () => {
    metricsPort = await freePort();
    stack = await startStack({
      transport: "kafka",
      cacheMonitor: true,
      now,
      serviceEnv: { "cache-monitor": { METRICS_PORT: String(metricsPort) } },
    });
    const subscription = await stack.bus.subscribe({
      topic: "cache.collapse.v1",
      groupId: uniqueName("collapse-observer"),
      handleMessage: async (message) => {
        const event = decodeEnvelope(CacheCollapseEvent, message.value, "cache_collapse_event");
        if (event.sessionId === sessionId) collapseEvents.push(event);
      },
    });
    stopObserver = () => subscription.stop();
  });
  afterAll(async () => {
    await stopObserver?.();
    await stack?.stop();
  });

  const build = async (skillsText: string): Promise<BuildRequestResponse> => {
    const saved = await callUnary(
      stack.sessions,
      stack.sessions.saveMessage,
      userTextMessage(sessionId, `turn at ${clock}`),
      deadline,
    );
    const assembly = stack.assembly();
    const request: BuildRequestRequest = {
      sessionId,
      minSeq: saved.seq,
      sections: SECTION_KEYS.map((key) => ({ key, text: key === "skills" ? skillsText : `${key} text` })),
      tools: [],
      wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
      model: "claude-test",
      workspace: "/tmp",
      rulesSource: undefined,
      embed: false,
      locale: "",
    };
    return callUnary(assembly, assembly.buildRequest, request, deadline);
  };

  const recordUsage = (requestId: string, cachedTokens: number): Promise<RecordUsageResponse> => {
    const monitor = stack.monitor;
    if (monitor === undefined) throw new Error("the stack runs no cache-monitor");
    const usage: UsageRecorded = {
      requestId,
      model: "claude-test",
      promptTokens: 40_000,
      cachedTokens,
      completionTokens: 300,
      cacheCreationTokens: 0,
      provider: "anthropic",
      calledAtMs: clock,
    };
    return callUnary(
      monitor,
      monitor.recordUsage,
      { sessionId, usage, idempotencyKey: "", providerResponseId: "", unbuilt: false },
      deadline,
    );
  };

  /** The monitor has joined the build's fingerprints, so the collapse is explained when detected. */
  const fingerprintsArrived = (requestId: string, changed: boolean) =>
    eventually(
      async () => {
        const monitor = stack.monitor;
        if (monitor === undefined) return undefined;
        const trace = await callUnary<{ sessionId: string; limit: number }, TraceSessionResponse>(
          monitor,
          monitor.traceSession,
          { sessionId, limit: 0 },
          deadline,
        );
        const row = trace.builds.find((b) => b.requestId === requestId);
        return row !== undefined && row.sectionHashes.length > 0 && row.prefixChanged === changed ? row : undefined;
      },
      { what: `fingerprints of ${requestId} at cache-monitor`, timeoutMs: 30_000 },
    );

  it("names section_changed:skills the same way in all three places", async () => {
    await callUnary(stack.sessions, stack.sessions.createSession, mainSessionRequest(sessionId, "/tmp"), deadline);
    // A cold first call, then four warm ones a minute apart: the session's norm is ~all cached.
    for (let turn = 0; turn < 5; turn++) {
      const built = await build("skills v1");
      await fingerprintsArrived(built.requestId, false);
      const answer = await recordUsage(built.requestId, turn === 0 ? 0 : 39_500);
      expect(answer.collapse).toBeUndefined();
      clock += 60_000;
    }

    const changed = await build("skills v2: a new skill");
    expect(changed.prefix?.changed).toBe(true);
    await fingerprintsArrived(changed.requestId, true);
    const answer = await recordUsage(changed.requestId, 1_024);
    expect(answer.collapse).toMatchObject({ causeCode: "section_changed:skills", changedSections: ["skills"] });

    const monitorAddress = stack.addresses["cache-monitor"];
    const listed = await prefixctl([
      "collapses",
      "--since",
      "all",
      "--session",
      sessionId,
      "--json",
      "--cache-monitor",
      monitorAddress,
    ]);
    expect(listed.code).toBe(0);
    const json = JSON.parse(listed.stdout) as {
      collapses: { cause_code: string; cause_disagreement: string | null }[];
      cause_totals: { cause_code: string; collapses: number }[];
    };
    expect(json.collapses.map((c) => c.cause_code)).toEqual(["section_changed:skills"]);
    expect(json.collapses[0]?.cause_disagreement).toBeNull();
    expect(json.cause_totals).toMatchObject([{ cause_code: "section_changed:skills", collapses: 1 }]);
    const trace = await prefixctl(["trace", sessionId, "--cache-monitor", monitorAddress]);
    expect(trace.stdout).toMatch(/COLLAPSE\s+section_changed:skills\s/);

    const published = await eventually(() => collapseEvents.at(-1), {
      what: "the collapse on cache.collapse.v1",
      timeoutMs: 30_000,
    });
    expect(published.payload?.value).toMatchObject({
      requestId: changed.requestId,
      causeCode: "section_changed:skills",
      causeDisagreement: "",
    });

    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    // The label carries the code's kind and the section label its key, so the label stays bounded.
    // At least 1: this run's cache-monitor also replays earlier runs' usages still on the shared test
    // broker's llm.usage.v1 (a fresh consumer group), and those provoked the same collapse.
    expect(metrics).toMatch(
      /prefixguard_cache_collapses_total\{(?=[^}]*section="skills")(?=[^}]*cause="section_changed")[^}]*\} [1-9]\d*$/m,
    );
  });
});
