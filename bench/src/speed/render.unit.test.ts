import { describe, expect, it } from "vitest";
import type { EndToEndResult, ThroughputResult } from "./measure";
import { buildStages, renderMarkdown } from "./render";
import { pipelineVsFloor } from "./report";
import type { PipelineResult, SpeedResults, TreeResult } from "./speed";

const q = (p50: number) => ({ n: 10, p50, p99: p50 * 2, mean: p50 * 1.1 });
const tp = (concurrency: number, perSecond: number): ThroughputResult => ({
  ...q(10),
  concurrency,
  seconds: 3,
  perSecond,
  errors: 0,
  cpu: { "prompt-assembly": 90, mariadbd: 20 },
});

function tree(commit: string, serverMs: number, stages?: TreeResult["stages"]): TreeResult {
  return {
    tree: commit,
    commit,
    rtt: q(0.5),
    latency: [{ turns: 500, bodyBytes: 88_000, build: q(12), floor: q(4), p50xFloor: 3, p99xFloor: 3 }],
    serverMsPerBuild500: serverMs,
    throughput: [tp(32, 180)],
    turnFlow: {
      bare: q(10),
      saveMessage: q(3),
      buildAfterSave: q(15),
      flow: q(18),
      extraP50Ms: 5,
      extraP99Ms: 10,
      extraPairedMedianMs: 4.5,
      extraPairedMedianInRtt: 9,
      extraP50InRtt: 10,
      extraP99InRtt: 10,
    },
    resolve: {
      retained: q(1),
      rtt: q(0.5),
      p50xRtt: 2,
      p99xRtt: 2,
      throughput: tp(32, 900),
      bare: tp(32, 1_500),
      overBare: { ratio: 0.6, goal: 0.7, pass: false },
    },
    ...(stages ? { stages } : {}),
  };
}

const endToEnd = (perSecond: number, cpu: Record<string, number>): EndToEndResult => ({
  offeredPerSecond: 0,
  answeredPerSecond: perSecond,
  answered: perSecond * 4,
  seconds: 4,
  errors: 0,
  lag: q(50),
  lagFirstQuarterP99: 100,
  lagLastQuarterP99: 100,
  unappliedProbesAtEnd: 0,
  cpu,
  appliedPerSecondDuringWrites: perSecond,
  backlogAtEndOfWrites: 0,
  endToEndPerSecond: perSecond,
  eventsApplied: perSecond * 4,
  endToEndSeconds: 4,
  endToEndCpu: cpu,
});
const services = ["session-events", "rules-snapshot", "prompt-assembly"];
// 600 events/s: 100% of one core is 1000/600 = 1.667 ms per event. The floor: 0.5 ms at 2,000/s.
const pipeline: PipelineResult = {
  sessions: 1000,
  writers: 32,
  processes: services,
  saturation: endToEnd(600, {
    "session-events": 40,
    "rules-snapshot": 15,
    "prompt-assembly": 35,
    mariadbd: 40,
    kafka: 20,
    bench: 30,
  }),
  at1000: endToEnd(580, {}),
  atClaimed: undefined,
  claimedPerSecond: 1000,
};
const floorRun = {
  ...endToEnd(2_000, {
    "pipeline-floor-server": 40,
    "pipeline-floor-consumer": 20,
    mariadbd: 30,
    kafka: 10,
    bench: 50,
  }),
  sessions: 1000,
  writers: 32,
  topic: "bench.pipeline-floor.1",
};
const floorProcesses = ["pipeline-floor-server", "pipeline-floor-consumer"];

const results = (before: TreeResult | undefined): SpeedResults => ({
  quick: true,
  plan: {
    builds: 40,
    warmup: 5,
    throughputSessions: 4,
    throughputMs: 3_000,
    turnFlows: 25,
    pipelineMs: 4_000,
    drainMs: 15_000,
  },
  before,
  after: {
    ...tree("abcdef1234", 11, { load_view: { meanMs: 3, count: 40 }, record: { meanMs: 2, count: 40 } }),
    pipeline,
  },
  floorThroughput: tp(32, 600),
  pipelineFloor: floorRun,
  pipelineVsFloor: pipelineVsFloor(pipeline.saturation, services, floorRun, floorProcesses),
});

describe("speed report rendering", () => {
  it("puts before and after side by side with their ratios to the floor", () => {
    const md = renderMarkdown(results(tree("2585937aaa", 40)), "2026-01-01T00:00:00.000Z");
    expect(md).toContain("| before 500 turns | 86 KiB | 12.0 | 24.0 | 4.0 | 8.0 | 3.00× | 3.00× |");
    expect(md).toContain("| after 500 turns |");
    expect(md).toContain("| floor | 32 | 600.0 |");
    expect(md).toContain("| load_view | 3.000 |");
  });

  it("judges Resolve/s against bare gRPC calls/s of the same server shape", () => {
    const md = renderMarkdown(results(undefined), "2026-01-01T00:00:00.000Z");
    expect(md).toContain("Resolve/s ≥ 70% of bare gRPC calls/s");
    expect(md).toContain("| after | 1.00 / 2.00 | 0.50 / 1.00 | 2.00× / 2.00× | 900 | 1500 | 60% **FAIL** |");
  });

  it("puts the pipeline's CPU per event next to its floor's, judged against the goal", () => {
    const md = renderMarkdown(results(undefined), "2026-01-01T00:00:00.000Z");
    expect(md).toContain("goal: total ≤ 2× the floor's");
    // Services 90% and mariadbd + kafka 60% of a core at 600/s; the floor 60% and 40% at 2,000/s.
    expect(md).toContain(
      "| pipeline | session-events + rules-snapshot + prompt-assembly | 2400 | 600 | 1.500 | 1.000 | 2.500 |",
    );
    expect(md).toContain(
      "| floor | pipeline-floor-server + pipeline-floor-consumer | 8000 | 2000 | 0.300 | 0.200 | 0.500 |",
    );
    expect(md).toContain("| pipeline ÷ floor |  |  | 0.30× | 5.00× | 5.00× | **5.00×** **FAIL** |");
  });

  it("renders without a before tree and records how each stage figure was obtained", () => {
    const md = renderMarkdown(results(undefined), "2026-01-01T00:00:00.000Z");
    expect(md).not.toContain("| before 500 turns");
    const stages = buildStages(results(tree("2585937aaa", 40)), "t") as {
      before: { measured: { serverMsPerBuild: number; source: string }; issueText: { source: string } };
      after: { sumOfStageMeansMs: number; source: string };
    };
    expect(stages.before.measured.serverMsPerBuild).toBe(40);
    expect(stages.before.measured.source).toContain("grpc_server_handling_seconds");
    expect(stages.before.issueText.source).toContain("docs/decisions/build-request-speed.md");
    expect(stages.after.sumOfStageMeansMs).toBe(5);
    expect(stages.after.source).toContain("prefixguard_build_stage_seconds");
  });

  it("reports memory as what a full collection leaves, with RSS beside it", () => {
    const mibs = (n: number) => n * 1024 * 1024;
    const base = results(undefined);
    const md = renderMarkdown(
      {
        ...base,
        after: {
          ...base.after,
          memory: {
            sessions: 1000,
            meanMessagesPerSession: 44,
            retainedBeforeBytes: mibs(200),
            retainedAfterBytes: mibs(330),
            retainedPer1000SessionsBytes: mibs(130),
            rssBeforeBytes: mibs(300),
            rssAfterBytes: mibs(310),
            rssPer1000SessionsBytes: mibs(10),
            viewCacheBytesBudget: mibs(256),
            viewCacheBytes: mibs(120),
            viewCacheSessions: 1000,
          },
        },
      },
      "2026-01-01T00:00:00.000Z",
    );
    expect(md).toContain(
      "200.0 MiB → 330.0 MiB after a full collection (heapUsed + external): **130.0 MiB per 1,000 active sessions**",
    );
    expect(md).toContain("RSS over the same builds 300.0 MiB → 310.0 MiB (10.0 MiB per 1,000 sessions;");
  });
});
