// A small replay through the real services on MariaDB (5 sessions, 7 turns, 2 sibling edits, one
// session across midnight, one compaction, one restart), once per policy: the stabilised product
// has no avoidable prefix change, the naive baseline shows the seeds' two offenders, and no
// stabilised system prompt carries a time of day or a random id (docs/decisions/clock-free-prefix.md).
import { beforeAll, describe, expect, it } from "vitest";
import {
  ADVISOR_ESTIMATE_TOLERANCE,
  checkReplay,
  type ReplayBuildRecord,
  type ReplayRunResult,
  runReplay,
} from "./run-replay";
import { generateWorkload, QUICK_WORKLOAD, type WorkloadOptions } from "./workload";
import { advisorEstimateError, simulatedCheapest } from "./write-prices";

const SMALL: WorkloadOptions = {
  ...QUICK_WORKLOAD,
  seed: 6,
  sessions: 5,
  days: 1,
  userTurns: [7, 7],
  editsPerDay: [2, 2],
  compactionsPerDay: [1, 1],
  midnightSessions: 1,
  multiDaySessions: 0,
  sessionStartHours: [20, 21],
  restart: true,
};

const TIME_OF_DAY = /\b\d{1,2}:\d{2}(:\d{2})?\b/;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/i;
const LONG_HEX = /\b[0-9a-f]{16,}\b/i;

describe("replay through the real services (small)", () => {
  const workload = generateWorkload(SMALL);
  const builds: Record<"naive" | "stabilised", ReplayBuildRecord[]> = { naive: [], stabilised: [] };
  let naive: ReplayRunResult;
  let stabilised: ReplayRunResult;

  beforeAll(async () => {
    naive = await runReplay(workload, { policy: "naive", progressEvery: 0, onBuild: (b) => builds.naive.push(b) });
    stabilised = await runReplay(workload, {
      policy: "stabilised",
      progressEvery: 0,
      onBuild: (b) => builds.stabilised.push(b),
    });
  }, 240_000);

  it("replays the workload it was given: edits, a midnight crossing, a compaction, a restart", () => {
    expect(workload.stats).toMatchObject({ sessions: 5, userTurns: 35, edits: 2, compactions: 1, restarts: 1 });
    expect(workload.stats.crossDaySessions).toBeGreaterThanOrEqual(1);
    expect(naive.builds).toBe(35);
    expect(stabilised.builds).toBe(35);
  });

  it("stabilised: zero avoidable prefix changes, by the bytes and by the monitor", () => {
    expect(stabilised.prefixChanges.observed.avoidable).toBe(0);
    expect(stabilised.prefixChanges.monitor.avoidable).toBe(0);
    expect(stabilised.prefixChanges.observed.unavoidableByCause).toEqual({ "first-build": 5, compaction: 1 });
    expect(checkReplay(naive, stabilised).stabilisedZeroAvoidable).toBe(true);
  });

  it("stabilised: a session's system prompt changes only at its compaction (re-pin), if at all", () => {
    const systems = new Map<string, Set<string>>();
    for (const build of builds.stabilised) {
      const set = systems.get(build.sessionId) ?? new Set<string>();
      set.add(build.systemText);
      systems.set(build.sessionId, set);
    }
    const compacted = workload.events.flatMap((event) => (event.kind === "compact" ? [event.sessionId] : []));
    expect(systems.size).toBe(5);
    for (const [sessionId, texts] of systems) {
      expect(texts.size).toBeLessThanOrEqual(compacted.includes(sessionId) ? 2 : 1);
    }
  });

  it("naive: workspace-rules and current-date changes, the monitor blinded by the restart", () => {
    const observed = naive.prefixChanges.observed.avoidableBySection;
    expect(observed["workspace-rules"] ?? 0).toBeGreaterThanOrEqual(2);
    expect(observed["current-date"] ?? 0).toBeGreaterThanOrEqual(1);
    expect(naive.prefixChanges.monitor.avoidableBySection["monitor-reset"] ?? 0).toBeGreaterThanOrEqual(1);
    for (const key of ["ttl5m", "ttl24h"] as const) {
      const a = naive.providerCache[key];
      const b = stabilised.providerCache[key];
      // Both runs replay the same days, so TTL expiry costs them the same.
      expect(a.ttlExpiredBuilds).toBe(b.ttlExpiredBuilds);
      expect(a.tokens.output).toBe(b.tokens.output);
      expect(b.cost.actual).toBeLessThanOrEqual(a.cost.actual);
    }
    // A 24-hour cache is warm across the midnight and the sibling edits, so there the breaks cost.
    const long = naive.providerCache.ttl24h;
    expect(long.afterAvoidableChange.builds).toBeGreaterThan(0);
    expect(long.cost.overOptimum).toBeGreaterThan(stabilised.providerCache.ttl24h.cost.overOptimum);
  });

  it("prefixctl collapses names the section and cause of every naive collapse, as the bytes saw them", () => {
    const { json, unnamed, matchingBytes } = naive.collapses;
    expect(json.total_collapses).toBeGreaterThan(0);
    expect(unnamed).toEqual([]);
    expect(matchingBytes).toBe(json.collapses.length);
    const byRequest = new Map(builds.naive.map((build) => [build.requestId, build]));
    for (const collapse of json.collapses) {
      const build = byRequest.get(collapse.request_id);
      expect(build?.sessionId).toBe(collapse.session_id);
      expect(collapse.cause).not.toMatch(/unknown/);
      if (collapse.changed_sections.includes("workspace-rules")) {
        expect(collapse.cause).toMatch(/AGENTS\.md reread from the workspace|rulesDecision=REREAD/);
      }
      if (collapse.changed_sections.includes("current-date")) {
        expect(collapse.cause).toMatch(/follows today's date|current-date changed: date/);
      }
    }
    // Seven turns are too little history for a sibling edit to collapse the cache; the quick
    // replay below has long enough sessions.
    expect(checkReplay(naive, stabilised).naiveCollapsesExplained).toBe(true);
  });

  it("stabilised: every collapse prefixctl reports is the compaction's, none avoidable", () => {
    expect(stabilised.collapses.avoidableByBytes).toBe(0);
    for (const collapse of stabilised.collapses.json.collapses) {
      expect(collapse.cause).toMatch(/compaction/);
      expect(collapse.changed_sections).not.toContain("workspace-rules");
      expect(collapse.changed_sections).not.toContain("current-date");
    }
    expect(checkReplay(naive, stabilised).stabilisedCollapsesUnavoidable).toBe(true);
  });

  it("prices both runs with write prices, Anthropic-style and OpenAI-style, and prefixctl advise recommends", () => {
    for (const run of [naive, stabilised]) {
      const { anthropic, openai } = run.writePriced;
      expect(anthropic.model).toBe("claude-sonnet-4-5");
      expect(openai.model).toBe("gpt-5.4");
      // A longer retention never caches less of the same requests.
      expect(anthropic.cachedShare["1h"] ?? 0).toBeGreaterThanOrEqual(anthropic.cachedShare["5m"] ?? 0);
      expect(openai.cachedShare["24h"] ?? 0).toBeGreaterThanOrEqual(openai.cachedShare["5m"] ?? 0);
      // The advisor reprices the 5-minute usage at exactly the simulated 5-minute cost.
      expect(anthropic.advisor.estimated["5m"]).toBeCloseTo(anthropic.cost["5m"] ?? -1, 9);
      expect(openai.advisor.estimated["5m"]).toBeCloseTo(openai.cost["5m"] ?? -1, 9);
      expect(["5m", "1h"]).toContain(anthropic.advisor.recommended);
      expect(["5m", "24h"]).toContain(openai.advisor.recommended);
      expect(run.advise.text).toContain(`Retention advice for session ${run.advise.sessionId}`);
      expect(run.advise.text).toMatch(/^(Use \S+ retention: it would have cost|Keep the 5m default: )/m);
    }
    expect(checkReplay(naive, stabilised).advisorMatchesSimulation).toBe(true);
  });

  it("stabilised system prompts carry no time of day and no random id (docs/decisions/clock-free-prefix.md)", () => {
    expect(TIME_OF_DAY.test("发布于 23:50:07")).toBe(true);
    expect(UUID.test("id 123e4567-e89b-12d3-a456-426614174000")).toBe(true);
    expect(LONG_HEX.test("hash 9f86d081884c7d65")).toBe(true);
    expect(builds.stabilised).toHaveLength(35);
    for (const build of builds.stabilised) {
      expect(build.systemText.length).toBeGreaterThan(1_000);
      expect(build.systemText).not.toMatch(TIME_OF_DAY);
      expect(build.systemText).not.toMatch(UUID);
      expect(build.systemText).not.toMatch(LONG_HEX);
    }
  });
});

// Long enough sessions for sibling edits to collapse the cache, and a restart that blinds the naive
// monitor: what `make bench` checks at full size, on the quick workload's naive run.
describe("prefixctl collapses on the quick naive replay", () => {
  let naive: ReplayRunResult;
  const builds: ReplayBuildRecord[] = [];

  beforeAll(async () => {
    naive = await runReplay(generateWorkload(QUICK_WORKLOAD), {
      policy: "naive",
      progressEvery: 0,
      onBuild: (b) => builds.push(b),
    });
  }, 240_000);

  it("names workspace-rules first, with the reread as its cause, for every collapse it caused", () => {
    const { json, unnamed } = naive.collapses;
    expect(unnamed).toEqual([]);
    expect(json.totals[0]?.section).toBe("workspace-rules");
    const rules = json.collapses.filter((collapse) => collapse.changed_sections.includes("workspace-rules"));
    expect(rules.length).toBeGreaterThanOrEqual(3);
    for (const collapse of rules) {
      expect(collapse.cause).toMatch(/AGENTS\.md reread from the workspace|rulesDecision=REREAD/);
      expect(collapse.extra_cost).toBeGreaterThan(0);
    }
    // Each named section is one the bytes of that build really changed.
    const byRequest = new Map(builds.map((build) => [build.requestId, build]));
    for (const collapse of json.collapses) {
      const verdict = byRequest.get(collapse.request_id)?.observed;
      const changed = verdict === undefined || verdict.kind === "none" ? [] : verdict.sections;
      for (const section of collapse.changed_sections) expect(changed).toContain(section);
    }
  });

  it("explains the collapses after the restart from cache-monitor's own fingerprints", () => {
    const recovered = naive.collapses.json.collapses.filter((collapse) =>
      collapse.cause.includes("lost the session's state"),
    );
    expect(recovered.length).toBe(naive.collapses.recoveredAfterRestart);
    expect(recovered.length).toBeGreaterThan(0);
    for (const collapse of recovered) {
      expect(collapse.changed_sections.length).toBeGreaterThan(0);
      expect(collapse.cause).toMatch(/cache-monitor's comparison with the session's previous build: /);
    }
    expect(naive.collapses.table).toMatch(/^Per section/m);
  });

  it("the retention advisor recommends what the write-priced simulation found cheapest (docs/decisions/retention-advisor.md)", () => {
    // Sibling edits land in idle gaps: a longer retention keeps a prefix the next call matches only up to the break.
    for (const style of Object.values(naive.writePriced)) {
      expect(style.advisor.recommended).toBe(simulatedCheapest(style));
      expect(advisorEstimateError(style)).toBeLessThanOrEqual(ADVISOR_ESTIMATE_TOLERANCE);
    }
  });
});
