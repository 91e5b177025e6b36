// The TypeScript example consumer (kafkajs + @prefix-guard/client's event types) against the real
// Kafka test broker: a run's events on all four topics with the producers' headers, checked for
// order, gaps and duplicates by subscriber-run.ts. It runs from the workspace's sources of the client
// (the "@prefix-guard/source" condition); typescript-client-pack.e2e.test.ts checks the packed client.
import { mkdtempSync, rmSync } from "node:fs";
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
import { repoRoot } from "./support";

const consumerScript = join(repoRoot, "deploy/examples/typescript-consumer/consume-events.ts");
const consume = (args: readonly string[]) =>
  runConsumer(process.execPath, ["--import", "tsx", "--conditions=@prefix-guard/source", consumerScript, ...args]);

describe("typescript consumer on the real Kafka broker", () => {
  let bus: MessageBus;
  let stateDir: string;

  beforeAll(() => {
    bus = createKafkaBus({ brokers: testKafkaBrokers, clientId: "typescript-consumer-test", logger: silentLogger() });
    stateDir = mkdtempSync(join(tmpdir(), "pg-ts-consumer-"));
  });
  afterAll(async () => {
    await bus?.close();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it("prints each event of a run once, per session in seq order, with its CloudEvents attributes; resumes after it", async () => {
    const published = await publishRun(bus, "ts-run");
    const args = consumerArgs(published.prefix, uniqueName("ts-group"), join(stateDir, "last-seqs"));
    const first = await consume(args);
    expect(first.stderr).not.toContain("skipping");
    expectRunConsumed(first, published);

    const more = await publishMore(bus, published);
    expectResumed(await consume(args), more);
  });

  it("reports a seq that never arrives as a gap and exits 6", async () => {
    const { prefix, session } = await publishGap(bus, "ts-gap");
    expectGapReported(await consume(consumerArgs(prefix, uniqueName("ts-gap"))), session);
  });

  it("refuses an unknown topic with exit 2 and the usage", async () => {
    const run = await consume(["--topics", "session.events.v2"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--topics: unknown session.events.v2");
    expect(run.stdout).toBe("");
  });
});
