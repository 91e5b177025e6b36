import { describe, expect, it } from "vitest";
import type { ThroughputResult } from "./measure";
import { buildStages, renderMarkdown } from "./render";
import type { SpeedResults, TreeResult } from "./speed";

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
    resolve: { retained: q(1), rtt: q(0.5), p50xRtt: 2, p99xRtt: 2, throughput: tp(32, 900) },
    ...(stages ? { stages } : {}),
  };
}

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
  after: tree("abcdef1234", 11, { load_view: { meanMs: 3, count: 40 }, record: { meanMs: 2, count: 40 } }),
  floorThroughput: tp(32, 600),
});

describe("speed report rendering", () => {
  it("puts before and after side by side with their ratios to the floor", () => {
    const md = renderMarkdown(results(tree("2585937aaa", 40)), "2026-01-01T00:00:00.000Z");
    expect(md).toContain("| before 500 turns | 86 KiB | 12.0 | 24.0 | 4.0 | 8.0 | 3.00× | 3.00× |");
    expect(md).toContain("| after 500 turns |");
    expect(md).toContain("| floor | 32 | 600.0 |");
    expect(md).toContain("| load_view | 3.000 |");
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
});
