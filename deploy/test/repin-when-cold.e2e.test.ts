// REPIN_WHEN_COLD through the running services: an AGENTS.md change held back while the session's
// cache is warm lands on the first build after an idle gap longer than the retention, rules-snapshot
// answers REPINNED_COLD_CACHE, prompt-assembly counts the change expected, and cache-monitor codes the
// collapse that follows as the expiry it is (ttl_expired), with prompt-assembly's cause.

import { uniqueName } from "@prefix-guard/bus/testing";
import { callUnary } from "@prefix-guard/grpc";
import { type BuildRequestResponse, WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import type { RecordUsageResponse } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import {
  claudeTestUsage,
  counterTotal,
  freePort,
  mainSessionRequest,
  priceBuild,
  saveAndBuild,
  scrapeMetricsUntil,
} from "./support";

const MINUTE = 60_000;
let clock = Date.UTC(2026, 9, 14, 5, 0, 0);
const now = () => clock;
const deadline = { deadlineMs: 10_000 };
const RULES_V1 = "| 仓库 | 用途 |\n|---|---|\n| dc-pts | 压测 |";
const RULES_V2 = `${RULES_V1}\n| knowledge | 知识索引 |`;

describe("REPIN_WHEN_COLD on the running stack", () => {
  const sessionId = uniqueName("cold");
  let stack: Stack;
  let metricsPort: number;

  beforeAll(async () => {
    metricsPort = await freePort();
    stack = await startStack({
      cacheMonitor: true,
      now,
      serviceEnv: { "prompt-assembly": { REPIN_WHEN_COLD: "true", METRICS_PORT: String(metricsPort) } },
    });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  // claude-test is not in the provider catalogue: its cache is judged under the 5-minute default.
  const build = (rules: string): Promise<BuildRequestResponse> =>
    saveAndBuild(stack, sessionId, `turn at ${clock}`, {
      sections: [{ key: "persona", text: "persona text" }],
      tools: [],
      wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
      model: "claude-test",
      workspace: "/tmp",
      rulesSource: { $case: "rulesContent", value: { text: rules } },
      embed: false,
      locale: "",
    });

  const recordUsage = (requestId: string, cachedTokens: number): Promise<RecordUsageResponse> =>
    priceBuild(stack, sessionId, requestId, claudeTestUsage(cachedTokens, clock));

  it("holds the change back while warm, re-pins it after a cold gap, and calls the collapse an expiry", async () => {
    await callUnary(stack.sessions, stack.sessions.createSession, mainSessionRequest(sessionId, "/tmp"), deadline);
    // A cold first call, then four warm ones a minute apart: the session's norm is ~all cached.
    for (let turn = 0; turn < 5; turn++) {
      const built = await build(RULES_V1);
      expect((await recordUsage(built.requestId, turn === 0 ? 0 : 39_500)).collapse).toBeUndefined();
      clock += MINUTE;
    }

    // The rules change a minute after the last call: the cache is warm, the change is held back.
    const held = await build(RULES_V2);
    expect(held.rulesDecision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);
    expect(held.prefix?.changed).toBe(false);
    expect(held.bodyJson).not.toContain("知识索引");
    expect((await recordUsage(held.requestId, 39_500)).collapse).toBeUndefined();

    // Twelve idle minutes: the provider's 5-minute cache is gone, so the change lands now.
    clock += 12 * MINUTE;
    const cold = await build(RULES_V2);
    expect(cold.rulesDecision).toBe(Decision.DECISION_REPINNED_COLD_CACHE);
    expect(cold.bodyJson).toContain("知识索引");
    const cause =
      "workspace-rules re-pinned on a cold cache (idle 12m outlived the 5m cache retention): the AGENTS.md edit held back since the last pin takes effect";
    expect(cold.prefix).toMatchObject({ changed: true, changedSections: ["workspace-rules"], cause });

    const answer = await recordUsage(cold.requestId, 1_024);
    expect(answer.collapse).toMatchObject({
      causeCode: "ttl_expired",
      causeDisagreement: "",
      changedSections: ["workspace-rules"],
      cause,
    });

    // Counted as an expected break, not an avoidable one.
    const breaks = "prefixguard_prefix_breaks_total";
    const expectedBreak = { section: "workspace-rules", expected: "true" };
    const metrics = await scrapeMetricsUntil(metricsPort, [{ name: breaks, labels: expectedBreak }]);
    expect(counterTotal(metrics, breaks, expectedBreak)).toBe(1);
    expect(counterTotal(metrics, breaks, { expected: "false" })).toBe(0);

    // Pinned now: a minute later the same rules are simply retained.
    clock += MINUTE;
    expect((await build(RULES_V2)).rulesDecision).toBe(Decision.DECISION_RETAINED);
  });
});
