// docs/capacity.md is rendered from the committed bench results: it fails here when it is not, so the
// document cannot drift from the bench. The rest checks the model it is rendered from.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { type BenchFigures, benchFigures, MEASURED_PROCESSES, type ProcessCpu } from "./figures";
import { fmtFixed, fmtInt, fmtRough } from "./format";
import { capacityModel, limitsOf, replicasFor, sizeResult, TODAY, TURN_LOOP, turnCost, WRITE_PATHS } from "./model";
import { CAPACITY_DOC, renderCapacityDoc } from "./render";
import { renderCommittedCapacityDoc, repoRoot } from "./write-capacity-doc";

const cpu = (shares: Partial<ProcessCpu>): ProcessCpu => ({
  "prompt-assembly": 0,
  "session-events": 0,
  "rules-snapshot": 0,
  mariadbd: 0,
  kafka: 0,
  ...shares,
});

/** Round figures: a build costs prompt-assembly 2 ms, an event costs session-events 0.4 ms, and so on. */
const figures: BenchFigures = {
  speedRun: { measuredAt: "2026-12-04T00:00:00.000Z", commit: "a".repeat(40), quick: false },
  gatewayRun: { measuredAt: "2026-12-04T00:00:00.000Z", quick: false },
  builds: {
    concurrency: 32,
    perSecond: 200,
    cpu: cpu({ "prompt-assembly": 40, "rules-snapshot": 20, mariadbd: 10, kafka: 4 }),
    source: "test",
  },
  events: {
    phase: "atClaimed",
    perSecond: 1_000,
    cpu: cpu({ "prompt-assembly": 50, "session-events": 40, "rules-snapshot": 20, mariadbd: 50, kafka: 30 }),
    source: "test",
  },
  relayShownPerSecond: 800,
  viewCache: {
    bytes: 100_000_000,
    sessions: 1_000,
    meanMessagesPerSession: 40,
    budgetBytes: 256 * 1024 * 1024,
    retainedPer1000SessionsBytes: 110_000_000,
  },
  gateway: { cpuMsPerRequest: 1, route: "openai_chat, JSON", concurrency: 32 },
};

describe("docs/capacity.md", () => {
  it("is what the committed bench results render (run make docs-capacity after make bench)", () => {
    const committed = readFileSync(resolve(repoRoot, CAPACITY_DOC), "utf8");
    expect(committed, `${CAPACITY_DOC} is not what bench/results render: run make docs-capacity`).toBe(
      renderCommittedCapacityDoc(),
    );
  });

  it("changes when a bench figure changes", () => {
    const speed = JSON.parse(readFileSync(resolve(repoRoot, "bench/results/speed.json"), "utf8"));
    const gateway = JSON.parse(readFileSync(resolve(repoRoot, "bench/results/gateway.json"), "utf8"));
    const rendered = renderCapacityDoc(capacityModel(benchFigures(speed, gateway)));
    speed.after.pipeline.saturation.cpu["session-events"] *= 2;
    speed.after.pipeline.atClaimed = null;
    expect(renderCapacityDoc(capacityModel(benchFigures(speed, gateway)))).not.toBe(rendered);
  });
});

describe("reading the bench results", () => {
  const speed = () => JSON.parse(readFileSync(resolve(repoRoot, "bench/results/speed.json"), "utf8"));
  const gateway = JSON.parse(readFileSync(resolve(repoRoot, "bench/results/gateway.json"), "utf8"));

  it("takes builds from the highest concurrency and events from the claimed rate, else the saturated phase", () => {
    const results = speed();
    const read = benchFigures(results, gateway);
    const top = Math.max(...results.after.throughput.map((row: { concurrency: number }) => row.concurrency));
    expect(read.builds.concurrency).toBe(top);
    expect(read.events.phase).toBe("atClaimed");
    results.after.pipeline.atClaimed = null;
    const fallback = benchFigures(results, gateway);
    expect(fallback.events.phase).toBe("saturation");
    expect(fallback.events.perSecond).toBe(results.after.pipeline.saturation.answeredPerSecond);
  });

  it("refuses a missing or non-numeric figure, naming its path", () => {
    const missing = speed();
    delete missing.after.pipeline.atClaimed.cpu.kafka;
    expect(() => benchFigures(missing, gateway)).toThrow(/after\.pipeline\.atClaimed\.cpu\.kafka is missing/);
    const zero = speed();
    for (const row of zero.after.throughput) row.perSecond = 0;
    expect(() => benchFigures(zero, gateway)).toThrow(/after\.throughput\.\d+\.perSecond is 0, expected more than 0/);
    const nan = speed();
    nan.after.memory.viewCacheBytes = null;
    expect(() => benchFigures(nan, gateway)).toThrow(/after\.memory\.viewCacheBytes is null, expected a finite number/);
  });
});

describe("the capacity model", () => {
  it("charges each process its share of a core over the rate: ms per turn = builds × per build + messages × per event", () => {
    const cost = turnCost(figures, TURN_LOOP);
    expect(cost.msPerBuild["prompt-assembly"]).toBeCloseTo(2);
    expect(cost.msPerEvent["session-events"]).toBeCloseTo(0.4);
    // prompt-assembly's event share is consumer work; session-events' is RPC work (SaveMessage, relay).
    expect(cost.cpuMs["prompt-assembly"]).toEqual({ rpc: expect.closeTo(2), consumer: expect.closeTo(1) });
    expect(cost.cpuMs["session-events"]).toEqual({ rpc: expect.closeTo(0.8), consumer: 0 });
    expect(cost.cpuMs.mariadbd.rpc + cost.cpuMs.mariadbd.consumer).toBeCloseTo(0.5 + 2 * 0.5);
  });

  it("doubles every use when the agents double", () => {
    const one = sizeResult(10_000, figures, TURN_LOOP, TODAY);
    const two = sizeResult(20_000, figures, TURN_LOOP, TODAY);
    expect(two.mariadb.fsyncsPerSecond).toBeCloseTo(2 * one.mariadb.fsyncsPerSecond);
    expect(two.mariadb.commitsPerSecond).toBeCloseTo(2 * one.mariadb.commitsPerSecond);
    expect(two.kafka.producedMBps).toBeCloseTo(2 * one.kafka.producedMBps);
    for (const process of MEASURED_PROCESSES.slice(0, 3))
      expect(two.services.find((s) => s.name === process)?.cores).toBeCloseTo(
        2 * (one.services.find((s) => s.name === process)?.cores ?? 0),
      );
    expect(two.limitUse.map((entry) => entry.share)).toEqual(
      one.limitUse.map((entry) => expect.closeTo(2 * entry.share)),
    );
  });

  it("counts commits per turn from the write paths: every group and batch of one", () => {
    const cost = turnCost(figures, TURN_LOOP);
    // SaveMessage, its relay mark and its projection for each of 2 messages; record, relay, cache-monitor's
    // prefix consumer for the build; RecordUsage, its relay mark, its read-back for the usage; 2 purges per 1,000.
    expect(cost.commits).toBeCloseTo(2 * 3 + 3 + 3 + 2 / 1_000);
    expect(cost.commitsByDatabase["session-events"]).toBe(4);
    const fsyncs = sizeResult(1_000, figures, TURN_LOOP, TODAY).mariadb.fsyncsPerSecond;
    expect(fsyncs).toBeCloseTo((1_000 / 20) * cost.commits * TODAY.fsyncsPerCommit);
    expect(WRITE_PATHS.every((path) => path.code.length > 0 && path.commits >= 0 && path.every >= 1)).toBe(true);
  });

  it("reaches a limit at capacity ÷ per-agent use, and the relay's moves with its leases, not with replicas", () => {
    const limits = limitsOf(figures, TURN_LOOP, TODAY);
    const relay = limits.find((limit) => limit.name.startsWith("the session-events relay"));
    // 60% of a core ÷ 0.4 ms per event = 1,500 events/s; 2 events per 20 s per agent = 0.1/s: 15,000 agents.
    expect(relay?.capacity).toBeCloseTo(1_500);
    expect(relay?.bindsAtAgents).toBeCloseTo(15_000);
    const moreReplicas = limitsOf(figures, TURN_LOOP, { ...TODAY, minReplicas: 50 });
    expect(moreReplicas.find((limit) => limit.name === relay?.name)?.bindsAtAgents).toBeCloseTo(15_000);
    const twoLeases = limitsOf(figures, TURN_LOOP, { ...TODAY, relayLeases: 2 });
    expect(twoLeases.find((limit) => limit.name === relay?.name)?.bindsAtAgents).toBeCloseTo(30_000);
    // Publishers needed at a size: its records over one lease's ceiling (100,000 agents: 10,000 events/s).
    const needed = sizeResult(100_000, figures, TURN_LOOP, TODAY).relays.find((r) => r.limit.name === relay?.name);
    expect(needed?.leasesNeeded).toBe(7);
  });

  it("names the limit reached at the fewest agents among those a size exceeds, and none below them all", () => {
    const limits = limitsOf(figures, TURN_LOOP, TODAY);
    const lowest = Math.min(...limits.map((limit) => limit.bindsAtAgents));
    expect(sizeResult(Math.floor(lowest) - 1, figures, TURN_LOOP, TODAY).firstExceeded).toBeUndefined();
    const first = sizeResult(Math.ceil(lowest) + 1, figures, TURN_LOOP, TODAY).firstExceeded;
    expect(first?.bindsAtAgents).toBe(lowest);
    // A primary with little IOPS is reached before the relay.
    const smallDisk = { ...TODAY, primaryWriteIops: 1_000 };
    expect(sizeResult(100_000, figures, TURN_LOOP, smallDisk).firstExceeded?.family).toBe("MariaDB primary");
    // One partition: prompt-assembly's 1 ms of consumer work a turn fills it at 12,000 agents, before the relay.
    const fewPartitions = { ...TODAY, topicPartitions: 1, primaryWriteIops: 1e9 };
    expect(sizeResult(100_000, figures, TURN_LOOP, fewPartitions).firstExceeded?.family).toBe("partition count");
  });

  it("sizes replicas to the CPU target, and none suffice once a partition's consumer work passes it", () => {
    expect(replicasFor(0.1, 0, TODAY)).toBe(TODAY.minReplicas);
    expect(replicasFor(3, 0, TODAY)).toBe(5);
    // Within the partitions every replica consumes: (rpc + consumer) ÷ target.
    expect(replicasFor(1.2, 1.2, TODAY)).toBe(4);
    // 12 replicas at the target, but 6 consuming replicas carry 0.5 of consumer work each: 6 ÷ (0.6 − 0.5) = 60.
    expect(replicasFor(6, 3, TODAY)).toBe(60);
    expect(replicasFor(6, 3.6, TODAY)).toBeNull();
  });

  it("asks for partitions so each group's consumer work fits, and one per replica of the busiest consumer", () => {
    const size = sizeResult(100_000, figures, TURN_LOOP, TODAY);
    // prompt-assembly: 5,000 turns/s × 1 ms of consumer work = 5 cores ÷ 0.6 → 9; (10 + 5) ÷ 0.6 → 25 replicas.
    expect(size.partitions).toEqual({ minimum: 9, forEveryReplica: 25 });
  });
});

describe("number formatting", () => {
  it("is the same on every machine", () => {
    expect(fmtInt(1_234_567.4)).toBe("1,234,567");
    expect(fmtFixed(-0.0001, 2)).toBe("0.00");
    expect(fmtFixed(12_345.678, 1)).toBe("12,345.7");
    expect([fmtRough(1_073.2), fmtRough(50), fmtRough(3.6), fmtRough(0.0794), fmtRough(0.002)]).toEqual([
      "1,073",
      "50",
      "3.6",
      "0.079",
      "0.002",
    ]);
  });
});
