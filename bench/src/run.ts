// `make bench`: runs every benchmark and writes bench/results/*.json (and replay.svg); the tables go
// to stdout. `--quick` runs smaller versions of each.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runLatencyBench } from "./latency";
import { runReplayBench } from "./replay/run-replay";
import { FULL_WORKLOAD, QUICK_WORKLOAD } from "./replay/workload";
import { progress } from "./stats";

const resultsDir = join(import.meta.dirname, "../results");
mkdirSync(resultsDir, { recursive: true });
const quick = process.argv.includes("--quick");
const measuredAt = new Date().toISOString();
const latency = await runLatencyBench(
  quick ? { sessions: 20, retainedPerSession: 5, builds: 20 } : { sessions: 200, retainedPerSession: 20, builds: 200 },
);
writeFileSync(
  join(resultsDir, "latency.json"),
  `${JSON.stringify({ measuredAt, node: process.version, ...latency }, null, 2)}\n`,
);
progress(`wrote ${join(resultsDir, "latency.json")}`);

const { svg, ...replay } = await runReplayBench(quick ? QUICK_WORKLOAD : FULL_WORKLOAD);
writeFileSync(
  join(resultsDir, "replay.json"),
  `${JSON.stringify({ measuredAt, node: process.version, quick, ...replay }, null, 2)}\n`,
);
writeFileSync(join(resultsDir, "replay.svg"), svg);
// What an SRE gets from `prefixctl collapses --since all` on each run's data.
writeFileSync(
  join(resultsDir, "replay-collapses.txt"),
  [
    `# prefixctl collapses --since all --limit 100000, after each replay run (${measuredAt})`,
    "",
    "## naive (the seeds' before)",
    "",
    replay.naive.collapses.table,
    "## stabilised",
    "",
    replay.stabilised.collapses.table,
  ].join("\n"),
);
progress(`wrote ${join(resultsDir, "replay.json")}, replay.svg and replay-collapses.txt`);
process.exit(0);
