import { eventually, uniqueName } from "@prefix-guard/bus/testing";
import { callUnary } from "@prefix-guard/grpc";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import {
  type CollapseWatch,
  claudeTestUsage,
  counterTotal,
  freePort,
  mainSessionRequest,
  priceBuild,
  runPrefixctl,
  saveAndBuild,
  scrapeMetricsUntil,
  sectionsWithSkills,
  sessionTurn,
  type TurnBuild,
  watchCollapses,
} from "./support";

const prefixctl = (argv: string[]) => runPrefixctl(argv);

let clock = Date.UTC(2026, 9, 14, 5, 0, 0);
const now = () => clock;
const deadline = { deadlineMs: 10_000 };

/** The session's build, its skills section as the turn has it. */
const buildWith = (skills: string): TurnBuild => ({
  sections: sectionsWithSkills(skills),
  tools: [],
  wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
  model: "claude-test",
  workspace: "/tmp",
  rulesSource: undefined,
  embed: false,
  locale: "",
});

describe("a provoked collapse's cause code in prefixctl, on Kafka and in /metrics", () => {
  const sessionId = uniqueName("cause");
  let stack: Stack;
  let metricsPort: number;
  let collapseWatch: CollapseWatch;

  beforeAll(async () => {
    metricsPort = await freePort();
    stack = await startStack({
      transport: "kafka",
      cacheMonitor: true,
      now,
      serviceEnv: { "cache-monitor": { METRICS_PORT: String(metricsPort) } },
    });
    collapseWatch = await watchCollapses(stack.bus, [sessionId]);
  });
  afterAll(async () => {
    await collapseWatch?.stop();
    await stack?.stop();
  });

  it("names section_changed:skills the same way in all three places", async () => {
    await callUnary(stack.sessions, stack.sessions.createSession, mainSessionRequest(sessionId, "/tmp"), deadline);
    // A cold first call, then four warm ones a minute apart: the session's norm is ~all cached.
    for (let turn = 0; turn < 5; turn++) {
      const { priced } = await sessionTurn(stack, {
        sessionId,
        text: `turn at ${clock}`,
        build: buildWith("skills v1"),
        usage: claudeTestUsage(turn === 0 ? 0 : 39_500, clock),
        prefixChanged: false,
      });
      expect(priced.collapse).toBeUndefined();
      clock += 60_000;
    }

    const changed = await saveAndBuild(stack, sessionId, `turn at ${clock}`, buildWith("skills v2: a new skill"));
    expect(changed.prefix?.changed).toBe(true);
    const answer = await priceBuild(stack, sessionId, changed.requestId, claudeTestUsage(1_024, clock), {
      prefixChanged: true,
    });
    expect(answer.collapse).toMatchObject({ causeCode: "section_changed:skills", changedSections: ["skills"] });

    const monitorAddress = stack.addresses["cache-monitor"];
    const listed = await prefixctl([
      "collapses",
      "--since",
      "all",
      "--session",
      sessionId,
      "--json",
      "--cache-monitor",
      monitorAddress,
    ]);
    expect(listed.code).toBe(0);
    const json = JSON.parse(listed.stdout) as {
      collapses: { cause_code: string; cause_disagreement: string | null }[];
      cause_totals: { cause_code: string; collapses: number }[];
    };
    expect(json.collapses.map((c) => c.cause_code)).toEqual(["section_changed:skills"]);
    expect(json.collapses[0]?.cause_disagreement).toBeNull();
    expect(json.cause_totals).toMatchObject([{ cause_code: "section_changed:skills", collapses: 1 }]);
    const trace = await prefixctl(["trace", sessionId, "--cache-monitor", monitorAddress]);
    expect(trace.stdout).toMatch(/COLLAPSE\s+section_changed:skills\s/);

    const published = await eventually(() => collapseWatch.events.at(-1), {
      what: "the collapse on cache.collapse.v1",
      timeoutMs: 30_000,
    });
    expect(published.payload?.value).toMatchObject({
      requestId: changed.requestId,
      causeCode: "section_changed:skills",
      causeDisagreement: "",
    });

    // The label carries the code's kind and the section label its key, so the label stays bounded.
    // At least 1: this run's cache-monitor also replays earlier runs' usages still on the shared test
    // broker's llm.usage.v1 (a fresh consumer group), and those provoked the same collapse.
    const skillsCollapses = { section: "skills", cause: "section_changed" };
    const metrics = await scrapeMetricsUntil(metricsPort, [
      { name: "prefixguard_cache_collapses_total", labels: skillsCollapses },
    ]);
    expect(counterTotal(metrics, "prefixguard_cache_collapses_total", skillsCollapses)).toBeGreaterThanOrEqual(1);
  });
});
