import { describe, expect, it } from "vitest";
import { DEFAULT_ATTRIBUTION_THRESHOLDS } from "../domain/attribution";
import type { StoredChange, StoredCollapse, StoredUsage } from "./ports";
import { buildSessionTrace } from "./session-trace";

const usage: StoredUsage = {
  id: 7,
  eventId: "e7",
  sessionId: "811",
  requestId: "r7",
  model: "gpt-4o",
  provider: "openai",
  promptTokens: 10_000,
  cachedTokens: 0,
  completionTokens: 10,
  cacheCreationTokens: 0,
  cacheCreation1hTokens: 0,
  reportedCost: null,
  providerReport: null,
  calledAtMs: 2_000,
  cost: 0.02,
  currency: "USD",
  source: "rpc",
  recordedAtMs: 2_000,
  idempotencyKey: null,
  contentSha256: null,
  providerResponseId: "",
  unbuilt: false,
};

const change: StoredChange = {
  eventId: "c7",
  sessionId: "811",
  requestId: "r7",
  occurredAtMs: 1_000,
  changedSections: ["skills"],
  toolsChanged: false,
  toolsChangeKind: "none",
  historyRewritten: false,
  cause: "skills changed",
  bytesAfterBreak: 100,
  tokensAfterBreak: 25,
  messages: 4,
};

const collapse: StoredCollapse = {
  id: 1,
  usageId: 7,
  sessionId: "811",
  requestId: "r7",
  model: "gpt-4o",
  promptTokens: 10_000,
  cachedTokens: 0,
  cachedShare: 0,
  baselineShare: 0.9,
  cost: 0.02,
  expectedCost: 0.005,
  extraCost: 0.015,
  changedSections: ["skills", "workspace-rules"],
  toolsChanged: false,
  historyRewritten: true,
  ourVerdict: "changed",
  cause: "skills changed; workspace-rules re-pinned (recovered by cache-monitor)",
  attribution: "none",
  causeCode: "section_changed:skills",
  causeDisagreement: "",
  providerCacheMissReason: "",
  calledAtMs: 2_000,
  detectedAtMs: 2_000,
  updatedAtMs: 3_000,
};

describe("buildSessionTrace", () => {
  it("explains a collapsed build by its collapse record, as ListCollapses does", () => {
    const [build] = buildSessionTrace(
      { observations: [], changes: [change], usages: [usage], collapses: [collapse] },
      10,
      DEFAULT_ATTRIBUTION_THRESHOLDS,
    );
    expect(build).toMatchObject({
      collapsed: true,
      cause: collapse.cause,
      changedSections: collapse.changedSections,
      historyRewritten: true,
      attribution: "agree",
    });
  });

  it("explains a build without a collapse by its PrefixChanged", () => {
    const [build] = buildSessionTrace(
      { observations: [], changes: [change], usages: [usage], collapses: [] },
      10,
      DEFAULT_ATTRIBUTION_THRESHOLDS,
    );
    expect(build).toMatchObject({ collapsed: false, cause: "skills changed", changedSections: ["skills"] });
  });
});
