// The Python example consumer against the real Kafka test broker: a run's events on all four topics,
// encoded by @prefix-guard/events with the producers' headers, decoded by protoc-generated Python
// from the committed .proto files; checked for order, gaps and duplicates by subscriber-run.ts.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKafkaBus, type MessageBus } from "@prefix-guard/bus";
import { testKafkaBrokers, uniqueName } from "@prefix-guard/bus/testing";
import { silentLogger } from "@prefix-guard/logging";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  consumerArgs,
  expectGapReported,
  expectResumed,
  expectRunConsumed,
  publishGap,
  publishMore,
  publishRun,
  runConsumer,
} from "./subscriber-run";
import { type DebianTooling, installPythonTooling, repoRoot } from "./support";

const python = "/usr/bin/python3";
const consumerScript = join(repoRoot, "deploy/examples/python-consumer/consume_session_events.py");
// Debian's protoc matches Debian's python3-protobuf; a newer protoc elsewhere on PATH may not.
const protoc = existsSync("/usr/bin/protoc") ? "/usr/bin/protoc" : "protoc";
const consume = (args: readonly string[]) =>
  runConsumer(python, [consumerScript, ...args], { PYTHONDONTWRITEBYTECODE: "1" });

describe("python consumer on the real Kafka broker", () => {
  let tooling: DebianTooling;
  let genDir = "";
  let bus: MessageBus;

  beforeAll(() => {
    tooling = installPythonTooling();
    bus = createKafkaBus({ brokers: testKafkaBrokers, clientId: "python-consumer-test", logger: silentLogger() });
    if (!tooling.ready) return;
    genDir = mkdtempSync(join(tmpdir(), "pg-pb2-"));
    const events = readdirSync(join(repoRoot, "proto/prefixguard/events/v1")).map(
      (file) => `proto/prefixguard/events/v1/${file}`,
    );
    const generated = spawnSync(
      protoc,
      ["-I", "proto", `--python_out=${genDir}`, "proto/prefixguard/common/v1/common.proto", ...events],
      { cwd: repoRoot, encoding: "utf8" },
    );
    if (generated.status !== 0) throw new Error(`protoc failed: ${generated.stderr}`);
  }, 600_000);
  afterAll(async () => {
    await bus?.close();
    if (genDir) rmSync(genDir, { recursive: true, force: true });
  });

  it("prints each event of a run once, per session in seq order, with its CloudEvents attributes; resumes after it", async ({
    skip,
  }) => {
    tooling.skipUnlessReady(skip);
    const published = await publishRun(bus, "py-run");
    const group = uniqueName("py-group");
    const state = join(genDir, "last-seqs");
    const args = [...consumerArgs(published.prefix, group, state), "--gen", genDir];
    const first = await consume(args);
    expect(first.stderr).not.toContain("skipping");
    expectRunConsumed(first, published);

    // Positions were committed and the last seqs kept: a rerun prints only what came after.
    const more = await publishMore(bus, published);
    expectResumed(await consume(args), more);
  });

  it("reports a seq that never arrives as a gap and exits 6", async ({ skip }) => {
    tooling.skipUnlessReady(skip);
    const { prefix, session } = await publishGap(bus, "py-gap");
    expectGapReported(await consume([...consumerArgs(prefix, uniqueName("py-gap")), "--gen", genDir]), session);
  });

  it("refuses to start without the generated modules and says how to generate them", async ({ skip }) => {
    tooling.skipUnlessReady(skip);
    const empty = mkdtempSync(join(tmpdir(), "pg-pb2-empty-"));
    try {
      const run = await consume(["--gen", empty]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain("protoc -I proto --python_out=");
      expect(run.stdout).toBe("");
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
