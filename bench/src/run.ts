// `make bench`: runs every benchmark and writes bench/results/*.json (and replay.svg, speed.md,
// gateway.md); the tables go to stdout. `--quick` runs smaller versions of each; `--only=speed`,
// `--only=replay` or `--only=gateway` (or BENCH_ONLY=...) runs one. Start it through
// bench/src/speed/bench.sh, which owns the bench Kafka broker.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { runGatewayBench } from "./gateway/gateway-bench";
import { goalLines, renderGatewayMarkdown } from "./gateway/gateway-report";
import { runReplayBench } from "./replay/run-replay";
import { FULL_WORKLOAD, QUICK_WORKLOAD } from "./replay/workload";
import { buildStages, renderMarkdown } from "./speed/render";
import { readKafkaPid, runSpeedBench } from "./speed/speed";
import { progress } from "./stats";

const repo = resolve(import.meta.dirname, "../..");
const resultsDir = join(import.meta.dirname, "../results");
mkdirSync(resultsDir, { recursive: true });
const quick = process.argv.includes("--quick");
const only =
  process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length) ??
  (process.env["BENCH_ONLY"] || undefined);
if (only !== undefined && !["speed", "replay", "gateway"].includes(only))
  throw new Error(`--only=${only}: expected speed, replay or gateway`);
const measuredAt = new Date().toISOString();
/** Where bench.sh's broker keeps its data and its pid file. */
const kafkaData = process.env["KAFKA_DATA"] ?? join(repo, ".run", "kafka-bench");

if (only === undefined || only === "speed") {
  const kafkaScript = join(repo, "deploy", "kafka", "kafka.sh");
  const baselineRoot = process.env["BENCH_BASELINE"];
  const speed = await runSpeedBench({
    repo,
    baselineRoot: baselineRoot === undefined || baselineRoot === "" ? undefined : baselineRoot,
    quick,
    kafkaBrokers: process.env["KAFKA_BROKERS"] ?? "127.0.0.1:39092",
    resetKafka: () => {
      for (const command of ["reset", "start"])
        execFileSync("bash", [kafkaScript, command], { stdio: ["ignore", 2, 2] });
    },
    kafkaPid: () => readKafkaPid(kafkaData),
  });
  const markdown = renderMarkdown(speed, measuredAt);
  writeFileSync(
    join(resultsDir, "speed.json"),
    `${JSON.stringify({ measuredAt, node: process.version, ...speed }, null, 2)}\n`,
  );
  writeFileSync(join(resultsDir, "build-stages.json"), `${JSON.stringify(buildStages(speed, measuredAt), null, 2)}\n`);
  writeFileSync(join(resultsDir, "speed.md"), `${markdown}\n`);
  process.stdout.write(`\n${markdown}\n`);
  progress(`wrote ${join(resultsDir, "speed.json")}, build-stages.json and speed.md`);
}

if (only === undefined || only === "replay") {
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
  // What an SRE gets from `prefixctl advise` on each run's busiest session.
  writeFileSync(
    join(resultsDir, "replay-advise.txt"),
    [
      `# prefixctl advise SESSION, the busiest session of each replay run (${measuredAt})`,
      "",
      `## naive: ${replay.naive.advise.sessionId}`,
      "",
      replay.naive.advise.text,
      `## stabilised: ${replay.stabilised.advise.sessionId}`,
      "",
      replay.stabilised.advise.text,
    ].join("\n"),
  );
  progress(`wrote ${join(resultsDir, "replay.json")}, replay.svg, replay-collapses.txt and replay-advise.txt`);
}

if (only === undefined || only === "gateway") {
  const kafkaBrokers = process.env["KAFKA_BROKERS"] || undefined;
  const gateway = await runGatewayBench({
    repo,
    quick,
    kafkaBrokers,
    brokerPid: kafkaBrokers === undefined ? undefined : readKafkaPid(kafkaData),
  });
  const machine = `Measured on this ${gateway.machine.cpus}-core machine (load average ${gateway.machine.loadAverageAtStart.join(" ")} at the start)`;
  const markdown = renderGatewayMarkdown(gateway, measuredAt, machine);
  writeFileSync(
    join(resultsDir, "gateway.json"),
    `${JSON.stringify({ measuredAt, node: process.version, ...gateway }, null, 2)}\n`,
  );
  writeFileSync(join(resultsDir, "gateway.md"), `${markdown}\n`);
  process.stdout.write(`\n${markdown}\n\n${goalLines(gateway.goals).join("\n")}\n`);
  progress(`wrote ${join(resultsDir, "gateway.json")} and gateway.md (the gateway part took ${gateway.seconds} s)`);
}
process.exit(0);
