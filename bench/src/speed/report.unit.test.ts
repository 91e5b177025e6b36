import { describe, expect, it } from "vitest";
import {
  counterTotal,
  cpuMsPerEvent,
  cpuPercent,
  cpuTicksFromStat,
  gaugeValue,
  histogramTotals,
  markdownTable,
  meanMsBetween,
  pipelineVsFloor,
  quantiles,
  ratio,
  rssBytesFromStatus,
} from "./report";

describe("speed report helpers", () => {
  it("takes utime + stime from /proc/<pid>/stat even when the command holds spaces and parens", () => {
    const stat = "4242 (node (main) x) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 11 0 123 456 789";
    expect(cpuTicksFromStat(stat)).toBe(300);
  });

  it("turns ticks into percent of one core", () => {
    expect(cpuPercent(150, 1_000)).toBe(150);
    expect(cpuPercent(50, 10_000)).toBe(5);
    expect(cpuPercent(1, 0)).toBeNaN();
  });

  it("reads VmRSS in bytes", () => {
    expect(rssBytesFromStatus("Name:\tnode\nVmRSS:\t  2048 kB\nVmSwap:\t0 kB\n")).toBe(2048 * 1024);
    expect(rssBytesFromStatus("Name:\tnode\n")).toBeNaN();
  });

  it("sums a histogram per label and averages the delta between two scrapes", () => {
    const scrape = (sum: number, count: number) =>
      [
        "# TYPE prefixguard_build_stage_seconds histogram",
        `prefixguard_build_stage_seconds_bucket{le="0.001",stage="assemble"} ${count}`,
        `prefixguard_build_stage_seconds_sum{stage="assemble"} ${sum}`,
        `prefixguard_build_stage_seconds_count{stage="assemble"} ${count}`,
        `prefixguard_build_stage_seconds_sum{stage="record"} 1`,
        `prefixguard_build_stage_seconds_count{stage="record"} 10`,
        `other_sum{stage="assemble"} 99`,
      ].join("\n");
    const before = histogramTotals(scrape(0.5, 100), "prefixguard_build_stage_seconds", "stage");
    const after = histogramTotals(scrape(0.8, 200), "prefixguard_build_stage_seconds", "stage");
    expect(before.get("assemble")).toEqual({ sum: 0.5, count: 100 });
    const means = meanMsBetween(before, after);
    expect(means["assemble"]?.count).toBe(100);
    expect(means["assemble"]?.meanMs).toBeCloseTo(3, 9);
    // No new observations: left out rather than reported as 0/0.
    expect(means["record"]).toBeUndefined();
  });

  it("filters histogram series on other labels", () => {
    const text = [
      `grpc_server_handling_seconds_sum{service="a",method="BuildRequest",code="OK"} 2`,
      `grpc_server_handling_seconds_count{service="a",method="BuildRequest",code="OK"} 4`,
      `grpc_server_handling_seconds_sum{service="a",method="BuildRequest",code="NOT_FOUND"} 1`,
      `grpc_server_handling_seconds_count{service="a",method="BuildRequest",code="NOT_FOUND"} 1`,
    ].join("\n");
    expect(histogramTotals(text, "grpc_server_handling_seconds", "method", { code: "OK" }).get("BuildRequest")).toEqual(
      { sum: 2, count: 4 },
    );
  });

  it("summarises samples and ratios", () => {
    const q = quantiles(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(q.p50).toBe(50);
    expect(q.p99).toBe(99);
    expect(q.mean).toBe(50.5);
    expect(ratio(10, 4)).toBe(2.5);
    expect(ratio(10, 0)).toBeNaN();
  });

  it("reads a gauge with or without default labels", () => {
    expect(gaugeValue('# HELP g x\ng{service="pa"} 42\n', "g")).toBe(42);
    expect(gaugeValue("g_total 1\ng 7\n", "g")).toBe(7);
    expect(counterTotal('# TYPE c counter\nc{reason="a"} 2\nc{reason="b"} 3\nc_other 9\n', "c")).toBe(5);
    expect(counterTotal("# TYPE c counter\n", "c")).toBe(0);
    expect(gaugeValue("h 1\n", "g")).toBeNaN();
  });

  it("writes a markdown table", () => {
    expect(markdownTable(["a", "b"], [["1", "2"]])).toBe("| a | b |\n| --- | --- |\n| 1 | 2 |");
  });

  it("spreads the named processes' CPU over the events applied, NaN when one was not measured", () => {
    // 150% of one core for 2 s is 3,000 ms of CPU, over 1,000 events.
    expect(cpuMsPerEvent({ a: 100, b: 50, c: 999 }, ["a", "b"], 2, 1_000)).toBe(3);
    expect(cpuMsPerEvent({ a: 100 }, ["a", "kafka"], 2, 1_000)).toBeNaN();
    expect(cpuMsPerEvent({ a: 100 }, ["a"], 2, 0)).toBeNaN();
  });

  it("compares the pipeline's CPU per event with its floor's and judges the total against 2×", () => {
    const run = (perSecond: number, cpu: Record<string, number>) => ({
      endToEndPerSecond: perSecond,
      eventsApplied: perSecond * 10,
      endToEndSeconds: 10,
      endToEndCpu: cpu,
    });
    const floor = run(1_000, { server: 30, consumer: 20, mariadbd: 30, kafka: 20 });
    // 1 ms per event for the floor (0.5 own, 0.5 shared); the pipeline 1.9 ms (1.2 own, 0.7 shared).
    const within = pipelineVsFloor(run(1_000, { se: 70, pa: 50, mariadbd: 50, kafka: 20 }), ["se", "pa"], floor, [
      "server",
      "consumer",
    ]);
    expect(within.pipeline.cpuMsPerEvent).toEqual({ own: 1.2, shared: 0.7, total: 1.9 });
    expect(within.floor.cpuMsPerEvent).toEqual({ own: 0.5, shared: 0.5, total: 1 });
    expect(within.ratio.own).toBeCloseTo(2.4, 9);
    expect(within.ratio.total).toBeCloseTo(1.9, 9);
    expect(within.goal).toBe(2);
    expect(within.pass).toBe(true);
    // The same CPU for half the events: 3.8 ms per event, 3.8×.
    const over = pipelineVsFloor(run(500, { se: 70, pa: 50, mariadbd: 50, kafka: 20 }), ["se", "pa"], floor, [
      "server",
      "consumer",
    ]);
    expect(over.ratio.total).toBeCloseTo(3.8, 9);
    expect(over.pass).toBe(false);
    // Kafka not measured on one side: no ratio, and no PASS.
    const unmeasured = pipelineVsFloor(run(1_000, { se: 70, pa: 50, mariadbd: 50 }), ["se", "pa"], floor, [
      "server",
      "consumer",
    ]);
    expect(unmeasured.ratio.total).toBeNaN();
    expect(unmeasured.pass).toBe(false);
  });
});
