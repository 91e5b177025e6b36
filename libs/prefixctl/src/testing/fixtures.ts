// Test data builders shared by the unit and integration tests: proto messages with every field set.
import type { CacheCollapsed } from "@prefix-guard/proto/events/v1/collapse_events";
import type { UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
import type { BuildTrace, CollapseRow } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import type { Snapshot } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";

// 2026-10-14T13:11:11.539Z: session 811's collapse in seed 001 §1.1.
export const collapseAtMs = Date.UTC(2026, 9, 14, 13, 11, 11, 539);

export function collapsed(overrides: Partial<CacheCollapsed> = {}): CacheCollapsed {
  return {
    requestId: "req-811-0000000000000000",
    model: "model-a",
    promptTokens: 453_569,
    cachedTokens: 8_576,
    cachedRatio: 8_576 / 453_569,
    baselineRatio: 0.998,
    changedSections: ["workspace-rules"],
    cause: "workspace-rules changed",
    cost: 0.8953,
    expectedCost: 0.0233,
    extraCost: 0.872,
    attribution: "none",
    providerCacheMissReason: "",
    calledAtMs: collapseAtMs,
    historyRewritten: false,
    toolsChanged: false,
    causeCode: "section_changed:workspace-rules",
    causeDisagreement: "",
    ...overrides,
  };
}

export function collapseRow(sessionId: string, overrides: Partial<CacheCollapsed> = {}): CollapseRow {
  return { sessionId, collapse: collapsed(overrides) };
}

export function usage(overrides: Partial<UsageRecorded> = {}): UsageRecorded {
  return {
    requestId: "req",
    model: "model-a",
    promptTokens: 1_000,
    cachedTokens: 990,
    completionTokens: 50,
    cacheCreationTokens: 0,
    provider: "anthropic",
    calledAtMs: collapseAtMs,
    ...overrides,
  };
}

export function build(overrides: Partial<BuildTrace> = {}): BuildTrace {
  return {
    requestId: "a1b2c3d4e5f6a7b8c9d0",
    builtAtMs: collapseAtMs,
    sectionHashes: ["h1", "h2"],
    toolsHash: "t1",
    firstBuild: false,
    prefixChanged: false,
    changedSections: [],
    toolsChangeKind: "none",
    historyRewritten: false,
    cause: "",
    rulesDecision: "RETAINED",
    dateNotices: [],
    anchorDate: "2026-10-13",
    estimatedTokens: 1_000,
    hasUsage: false,
    cost: 0,
    collapsed: false,
    attribution: "unknown",
    causeCode: "",
    causeDisagreement: "",
    ...overrides,
  };
}

export function snapshot(overrides: Partial<Snapshot> = {}): Snapshot {
  return {
    sessionId: "811",
    workspace: "/workspaces/oc_4fc3cb715272aae592213f167743846d",
    rulesText: "## 工作区规则\nkeep tables sorted\n",
    rulesHash: "cd34".repeat(16),
    sourcePath: "/workspaces/oc_4fc3cb715272aae592213f167743846d/AGENTS.md",
    sourceMtimeMs: Date.UTC(2026, 9, 13, 16, 14, 57),
    generation: 3,
    lastReportedDiskHash: "",
    createdAtMs: Date.UTC(2026, 9, 13, 14, 14, 38),
    updatedAtMs: Date.UTC(2026, 9, 13, 14, 14, 38),
    ...overrides,
  };
}
