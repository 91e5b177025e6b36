// `make bench`: runs every benchmark and writes bench/results/*.json; the tables go to stdout.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runLatencyBench } from "./latency";
import { progress } from "./stats";

const resultsDir = join(import.meta.dirname, "../results");
mkdirSync(resultsDir, { recursive: true });
const quick = process.argv.includes("--quick");
const latency = await runLatencyBench(
  quick ? { sessions: 20, retainedPerSession: 5, builds: 20 } : { sessions: 200, retainedPerSession: 20, builds: 200 },
);
writeFileSync(
  join(resultsDir, "latency.json"),
  `${JSON.stringify({ measuredAt: new Date().toISOString(), node: process.version, ...latency }, null, 2)}\n`,
);
progress(`wrote ${join(resultsDir, "latency.json")}`);
process.exit(0);
