// speed.md (pasted into README) and build-stages.json from one run's results.
import { fmt, markdownTable, type PipelineVsFloor, passFail, SHARED_PROCESSES } from "./report";
import { BASELINE_COMMIT, type SpeedResults, type TreeResult } from "./speed";

/**
 * The breakdown measured before the speed work: 42.6 ms of server time, 500 turns
 * (docs/decisions/build-request-speed.md).
 */
const issueBefore = {
  serverMs: 42.6,
  shares: {
    loadSessionView: 0.2,
    "fingerprint transaction": 0.17,
    "Resolve round trip": 0.16,
    "per-message fingerprints": 0.13,
    "serialize + canonical JSON": 0.13,
    estimateTokens: 0.12,
  },
};

export function buildStages(results: SpeedResults, measuredAt: string): unknown {
  const after = results.after.stages ?? {};
  const afterTotal = Object.values(after).reduce((a, s) => a + s.meanMs, 0);
  return {
    measuredAt,
    quick: results.quick,
    before: {
      commit: results.before?.commit ?? BASELINE_COMMIT,
      measured: {
        serverMsPerBuild: results.before?.serverMsPerBuild500 ?? null,
        source:
          "grpc_server_handling_seconds{method=BuildRequest,code=OK} _sum/_count delta over the 500-turn latency run of the baseline tree in this run (the baseline has no stage histogram)",
      },
      issueText: {
        ...issueBefore,
        source:
          "the breakdown before the speed work (docs/decisions/build-request-speed.md), not this run's: share of the 42.6 ms server time",
      },
    },
    after: {
      commit: results.after.commit,
      serverMsPerBuild: results.after.serverMsPerBuild500,
      stages: after,
      sumOfStageMeansMs: Number(afterTotal.toFixed(3)),
      source:
        "prefixguard_build_stage_seconds{stage} _sum/_count delta scraped from prompt-assembly's /metrics before and after the 500-turn latency run (load_view and resolve_rules overlap, so the stage sum may exceed the server time)",
    },
  };
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(0)} KiB`;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function busiest(cpu: Readonly<Record<string, number>>): string {
  const top = Object.entries(cpu).sort((a, b) => b[1] - a[1])[0];
  return top ? `${top[0]} at ${fmt(top[1], 0)}% of one core` : "–";
}

function cpuCell(cpu: Readonly<Record<string, number>>): string {
  return Object.entries(cpu)
    .map(([name, pct]) => `${name} ${fmt(pct, 0)}%`)
    .join(", ");
}

export function renderMarkdown(results: SpeedResults, measuredAt: string): string {
  const { before, after } = results;
  const out: string[] = [];
  out.push(
    `### Speed (\`make bench\`${results.quick ? " --quick" : ""}, ${measuredAt}; before = ${BASELINE_COMMIT}, after = ${after.commit.slice(0, 7)}; each service its own process, real Kafka + MariaDB)`,
    "",
  );
  const rows: string[][] = [];
  const latencyRow = (label: string, tree: TreeResult | undefined, turns: number) => {
    const row = tree?.latency.find((r) => r.turns === turns);
    if (!row) return;
    rows.push([
      `${label} ${turns} turns`,
      kib(row.bodyBytes),
      fmt(row.build.p50),
      fmt(row.build.p99),
      fmt(row.floor.p50),
      fmt(row.floor.p99),
      `${fmt(row.p50xFloor, 2)}×`,
      `${fmt(row.p99xFloor, 2)}×`,
    ]);
  };
  latencyRow("before", before, 500);
  for (const turns of [50, 500, 2000]) latencyRow("after", after, turns);
  out.push("**BuildRequest latency vs the floor measured in the same run** (ms; goal p50 ≤ 2×, p99 ≤ 3×)", "");
  out.push(
    markdownTable(["case", "body", "p50", "p99", "floor p50", "floor p99", "p50 ÷ floor", "p99 ÷ floor"], rows),
    "",
  );

  const tpRows: string[][] = [];
  for (const [label, tree] of [
    ["before", before],
    ["after", after],
  ] as const) {
    for (const t of tree?.throughput ?? []) {
      tpRows.push([
        label,
        String(t.concurrency),
        fmt(t.perSecond),
        fmt(t.p50),
        fmt(t.p99),
        String(t.errors),
        cpuCell(t.cpu),
      ]);
    }
  }
  const f = results.floorThroughput;
  tpRows.push(["floor", "32", fmt(f.perSecond), fmt(f.p50), fmt(f.p99), String(f.errors), cpuCell(f.cpu)]);
  out.push("**Throughput of one prompt-assembly process, 500-turn sessions** (goal ≥ 500 builds/s at c=32)", "");
  out.push(
    markdownTable(["tree", "concurrency", "builds/s", "p50 ms", "p99 ms", "errors", "CPU (% of one core)"], tpRows),
    "",
  );

  const resolveRows: string[][] = [];
  for (const [label, tree] of [
    ["before", before],
    ["after", after],
  ] as const) {
    if (!tree) continue;
    const r = tree.resolve;
    resolveRows.push([
      label,
      `${fmt(r.retained.p50, 2)} / ${fmt(r.retained.p99, 2)}`,
      `${fmt(r.rtt.p50, 2)} / ${fmt(r.rtt.p99, 2)}`,
      `${fmt(r.p50xRtt, 2)}× / ${fmt(r.p99xRtt, 2)}×`,
      fmt(r.throughput.perSecond, 0),
      fmt(r.bare.perSecond, 0),
      `${fmt(r.overBare.ratio * 100, 0)}% ${passFail(r.overBare.pass)}`,
      cpuCell(r.throughput.cpu),
    ]);
  }
  const resolveGoal = results.after.resolve.overBare.goal;
  out.push(
    `**Resolve (retained) vs a bare gRPC round trip** (p50 / p99 ms; goal p99 ≤ 2× RTT, ≥ 3,000 Resolve/s, Resolve/s ≥ ${fmt(resolveGoal * 100, 0)}% of bare gRPC calls/s of the same server shape, both at c=32)`,
    "",
  );
  out.push(
    markdownTable(
      [
        "tree",
        "Resolve",
        "bare RTT",
        "÷ RTT",
        "Resolve/s at c=32",
        "bare calls/s at c=32",
        "Resolve/s ÷ bare calls/s",
        "CPU (% of one core)",
      ],
      resolveRows,
    ),
    "",
    "Bare calls: Ping, a unary @grpc/grpc-js method answering an empty message, on the floor server's own process, measured right after Resolve/s. The after tree is asked as prompt-assembly asks after a session's first build, naming the section it holds by hash (known_rules_hash), so the ~15 KB text is not sent back; the before tree predates that field.",
    "",
  );

  const flowRows: string[][] = [];
  for (const [label, tree] of [
    ["before", before],
    ["after", after],
  ] as const) {
    if (!tree) continue;
    const t = tree.turnFlow;
    flowRows.push([
      label,
      `${fmt(t.bare.p50)} / ${fmt(t.bare.p99)}`,
      `${fmt(t.saveMessage.p50)} / ${fmt(t.saveMessage.p99)}`,
      `${fmt(t.buildAfterSave.p50)} / ${fmt(t.buildAfterSave.p99)}`,
      `${fmt(t.extraP50Ms, 2)} / ${fmt(t.extraP99Ms, 2)}`,
      `${fmt(t.extraP50InRtt, 1)} / ${fmt(t.extraP99InRtt, 1)}`,
      `${fmt(t.extraPairedMedianMs, 2)} (${fmt(t.extraPairedMedianInRtt, 1)} RTT)`,
      `${fmt(tree.rtt.p50, 2)} / ${fmt(tree.rtt.p99, 2)}`,
    ]);
  }
  out.push(
    "**Turn flow: SaveMessage then BuildRequest(min_seq), 500 turns** (p50 / p99 ms; goal: at most one round trip more than a bare build)",
    "",
  );
  out.push(
    markdownTable(
      [
        "tree",
        "bare build",
        "SaveMessage",
        "build after save",
        "extra vs bare",
        "extra in bare RTTs",
        "paired median extra",
        "bare gRPC RTT",
      ],
      flowRows,
    ),
    "",
  );

  const p = after.pipeline;
  if (p) {
    const s = p.saturation;
    out.push(`**Event pipeline: ${p.writers} writers over ${p.sessions} sessions (after only)**`, "");
    const lagRow = (label: string, r: typeof s | typeof p.at1000) => [
      label,
      r.offeredPerSecond > 0 ? fmt(r.offeredPerSecond, 0) : "unpaced",
      fmt(r.answeredPerSecond, 0),
      fmt(r.lag.p50),
      fmt(r.lag.p99),
      `${fmt(r.lagFirstQuarterP99, 0)} → ${fmt(r.lagLastQuarterP99, 0)}`,
      cpuCell(r.cpu),
    ];
    const pRows = [lagRow("unpaced (max)", s), lagRow("1,000/s offered", p.at1000)];
    if (p.atClaimed) pRows.push(lagRow(`${p.claimedPerSecond}/s offered (claimed)`, p.atClaimed));
    out.push(
      markdownTable(
        [
          "phase",
          "offered/s",
          "SaveMessage answered/s",
          "lag p50 ms",
          "lag p99 ms",
          "lag p99 first → last quarter",
          "CPU (% of one core)",
        ],
        pRows,
      ),
      "",
      `Busiest process while saturated: ${busiest(s.cpu)}. Max: projection applied ${fmt(s.appliedPerSecondDuringWrites, 0)} events/s while saturated (backlog ${s.backlogAtEndOfWrites} at the end of the writes), ${fmt(s.endToEndPerSecond, 0)} events/s end to end until all were applied; goal ≥ 5,000/s, lag p99 < 100 ms at 1,000/s.`,
      "",
    );
  }
  if (results.pipelineVsFloor && p) out.push(...pipelineFloorSection(results.pipelineVsFloor, results, p.writers), "");
  const m = after.memory;
  if (m) {
    out.push(
      `**Memory:** one build on each of ${m.sessions} sessions (${fmt(m.meanMessagesPerSession, 0)} events each on average) left prompt-assembly holding ${mib(m.retainedBeforeBytes)} → ${mib(m.retainedAfterBytes)} after a full collection (heapUsed + external): **${mib(m.retainedPer1000SessionsBytes)} per 1,000 active sessions**. RSS over the same builds ${mib(m.rssBeforeBytes)} → ${mib(m.rssAfterBytes)} (${mib(m.rssPer1000SessionsBytes)} per 1,000 sessions; garbage not yet collected and pages the heap keeps included). View cache ${mib(m.viewCacheBytes)} over ${fmt(m.viewCacheSessions, 0)} sessions by its own estimate, budget VIEW_CACHE_BYTES = ${mib(m.viewCacheBytesBudget)}.`,
      "",
    );
  }
  if (after.stages) {
    const stageRows = Object.entries(after.stages).map(([stage, s]) => [stage, fmt(s.meanMs, 3)]);
    stageRows.push(["server time per build (after)", fmt(after.serverMsPerBuild500, 2)]);
    stageRows.push(["server time per build (before, measured)", fmt(before?.serverMsPerBuild500, 2)]);
    stageRows.push(["server time per build (before, issue text)", fmt(issueBefore.serverMs, 1)]);
    out.push("**Stages of a 500-turn build (mean ms, from prefixguard_build_stage_seconds)**", "");
    out.push(markdownTable(["stage", "mean ms"], stageRows), "");
  }
  return out.join("\n");
}

function processList(names: readonly string[]): string {
  return names.join(" + ");
}

/** The pipeline's CPU per event next to its floor's, and the ratio judged against the goal. */
export function pipelineFloorSection(comparison: PipelineVsFloor, results: SpeedResults, writers: number): string[] {
  const { pipeline, floor, ratio } = comparison;
  const pipelineRun = results.after.pipeline?.saturation;
  const floorRun = results.pipelineFloor;
  const side = (label: string, cost: typeof pipeline, cpu: Readonly<Record<string, number>> | undefined) => [
    label,
    processList(cost.processes),
    fmt(cost.events, 0),
    fmt(cost.eventsPerSecond, 0),
    fmt(cost.cpuMsPerEvent.own, 3),
    fmt(cost.cpuMsPerEvent.shared, 3),
    fmt(cost.cpuMsPerEvent.total, 3),
    cpu ? cpuCell(cpu) : "–",
  ];
  return [
    `**Event pipeline against its floor: CPU per event** (${writers} unpaced writers over ${floorRun.sessions} sessions each, from the first write until every answered one was applied; CPU ms per event; goal: total ≤ ${fmt(comparison.goal, 0)}× the floor's)`,
    "",
    markdownTable(
      [
        "side",
        "own processes",
        "events applied",
        "events/s end to end",
        "own CPU ms/event",
        `${processList(SHARED_PROCESSES)} CPU ms/event`,
        "total CPU ms/event",
        "CPU over the window (% of one core)",
      ],
      [
        side("pipeline", pipeline, pipelineRun?.endToEndCpu),
        side("floor", floor, floorRun.endToEndCpu),
        [
          "pipeline ÷ floor",
          "",
          "",
          `${fmt(pipeline.eventsPerSecond / floor.eventsPerSecond, 2)}×`,
          `${fmt(ratio.own, 2)}×`,
          `${fmt(ratio.shared, 2)}×`,
          `**${fmt(ratio.total, 2)}×** ${passFail(comparison.pass)}`,
          "",
        ],
      ],
    ),
    "",
    "The floor (bench/src/speed/pipeline-floor.ts): SaveMessage on a bare @grpc/grpc-js server that writes each message as a MessageSaved event of the real one's size with group commit (one INSERT per group of concurrent calls, answered after its commit) and produces it with libs/bus's Kafka producer; a bare consumer with libs/bus's consumer settings that decodes each record and upserts one row per session. Same writers, sessions, texts and duration as the pipeline's unpaced phase.",
  ];
}
