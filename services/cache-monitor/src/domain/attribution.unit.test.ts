import { describe, expect, it } from "vitest";
import {
  attributeBuild,
  collapseAttributionOf,
  collapseCause,
  formatIdle,
  NO_SECTION,
  ourVerdictOf,
  providerSawMiss,
  sectionsOfCollapse,
} from "./attribution";
import type { EarlierCall, PrefixChange, PrefixJoin, ProviderCacheReport, UsageFacts } from "./model";
import { NO_PREFIX_DATA } from "./model";

const CALLED_AT = Date.UTC(2026, 9, 14, 5, 11, 11, 539);

function usage(overrides: Partial<UsageFacts> = {}): UsageFacts {
  return {
    requestId: "req-811-478",
    model: "glm-4.6",
    provider: "zhipu",
    promptTokens: 453_569,
    cachedTokens: 8_576,
    completionTokens: 621,
    cacheCreationTokens: 0,
    cacheCreation1hTokens: 0,
    reportedCost: null,
    providerReport: null,
    calledAtMs: CALLED_AT,
    ...overrides,
  };
}

function report(overrides: Partial<ProviderCacheReport> = {}): ProviderCacheReport {
  return {
    cacheMissReason: "",
    cacheReadInputTokens: 0,
    cacheCreationInputTokens: 0,
    openaiCachedTokens: 0,
    rawJson: "",
    ...overrides,
  };
}

const rulesChange: PrefixChange = {
  changedSections: ["workspace-rules"],
  toolsChanged: false,
  toolsChangeKind: "none",
  historyRewritten: false,
  cause: "new workspace-rules snapshot pinned",
};
const changed: PrefixJoin = { observed: { firstBuild: false }, change: rulesChange };
const unchanged: PrefixJoin = { observed: { firstBuild: false }, change: null };
const firstBuild: PrefixJoin = { observed: { firstBuild: true }, change: null };
/** The observation announced a PrefixChanged that has not arrived (docs/decisions/awaited-prefix-change.md). */
const changeOnItsWay: PrefixJoin = { observed: { firstBuild: false, prefixChanged: true }, change: null };
const hit = usage({ cachedTokens: 452_000 });

const previous = (overrides: Partial<EarlierCall> = {}): EarlierCall => ({
  promptTokens: 452_000,
  cachedTokens: 451_000,
  model: "glm-4.6",
  calledAtMs: CALLED_AT - 302_000,
  firstOfSession: false,
  ...overrides,
});

describe("ourVerdictOf", () => {
  it("reads the join: a PrefixChanged wins, a FingerprintObserved alone means unchanged or first build", () => {
    expect(ourVerdictOf(changed)).toBe("changed");
    expect(ourVerdictOf({ observed: null, change: rulesChange })).toBe("changed");
    expect(ourVerdictOf(unchanged)).toBe("unchanged");
    expect(ourVerdictOf(firstBuild)).toBe("first_build");
    expect(ourVerdictOf(NO_PREFIX_DATA)).toBe("unknown");
  });

  it("is unknown, not unchanged, while the PrefixChanged the observation announced is on its way", () => {
    expect(ourVerdictOf(changeOnItsWay)).toBe("unknown");
    expect(ourVerdictOf({ ...changeOnItsWay, change: rulesChange })).toBe("changed");
  });
});

describe("providerSawMiss", () => {
  it("believes a stated miss reason even when the share looks normal", () => {
    expect(
      providerSawMiss(
        usage({ cachedTokens: 452_000, providerReport: report({ cacheMissReason: "ttl_expired" }) }),
        false,
      ),
    ).toBe(true);
  });

  it("reads ≈ 0 cache reads in the provider's report as a miss (seed 811 read 1.9%)", () => {
    const anthropic = report({ cacheReadInputTokens: 8_576, cacheCreationInputTokens: 444_993 });
    expect(providerSawMiss(usage({ cachedTokens: 452_000, providerReport: anthropic }), false)).toBe(true);
    const openai = report({ openaiCachedTokens: 450_000 });
    expect(providerSawMiss(usage({ cachedTokens: 452_000, providerReport: openai }), false)).toBe(false);
  });

  it("ignores an empty report and small prompts, and counts a collapse or a ≈ 0 billed share as a miss", () => {
    expect(providerSawMiss(usage({ cachedTokens: 452_000, providerReport: report() }), false)).toBe(false);
    expect(providerSawMiss(usage({ promptTokens: 900, cachedTokens: 0 }), false)).toBe(false);
    expect(providerSawMiss(usage(), false)).toBe(true);
    expect(providerSawMiss(usage({ cachedTokens: 200_000 }), true)).toBe(true);
    expect(providerSawMiss(usage({ cachedTokens: 200_000 }), false)).toBe(false);
  });
});

describe("attributeBuild", () => {
  it("agrees when both saw a break or neither did", () => {
    expect(attributeBuild("changed", usage(), true)).toBe("agree");
    expect(attributeBuild("unchanged", hit, false)).toBe("agree");
    expect(attributeBuild("first_build", usage({ cachedTokens: 0 }), false)).toBe("agree");
  });

  it("is provider_only when the provider missed while our fingerprints saw no change", () => {
    expect(attributeBuild("unchanged", usage(), true)).toBe("provider_only");
    expect(
      attributeBuild(
        "unchanged",
        usage({ cachedTokens: 452_000, providerReport: report({ cacheMissReason: "routing" }) }),
        false,
      ),
    ).toBe("provider_only");
  });

  it("is ours_only when we changed the prefix and the provider still hit", () => {
    expect(attributeBuild("changed", hit, false)).toBe("ours_only");
  });

  it("is unknown without a usage or without our fingerprint", () => {
    expect(attributeBuild("changed", null, false)).toBe("unknown");
    expect(attributeBuild("unknown", usage(), true)).toBe("unknown");
  });

  it("spells agreement 'none' on a collapse", () => {
    expect(collapseAttributionOf("agree")).toBe("none");
    expect(collapseAttributionOf("provider_only")).toBe("provider_only");
  });
});

describe("collapseCause", () => {
  it("is our PrefixChanged's cause, with the provider's reason when it gave one", () => {
    expect(collapseCause(usage(), changed, previous())).toBe("new workspace-rules snapshot pinned");
    expect(
      collapseCause(usage({ providerReport: report({ cacheMissReason: "prefix mismatch" }) }), changed, null),
    ).toBe("new workspace-rules snapshot pinned; provider says: prefix mismatch");
    const bare = { observed: null, change: { ...rulesChange, cause: "" } };
    expect(collapseCause(usage(), bare, null)).toBe("prefix changed: [workspace-rules]");
  });

  it("says the cause is not known yet while our fingerprint has not arrived", () => {
    expect(collapseCause(usage(), NO_PREFIX_DATA, null)).toBe(
      "no prompt.prefix.v1 fingerprint for request req-811-478 yet: cause not known",
    );
    expect(collapseCause(usage(), changeOnItsWay, previous())).toBe(
      "the PrefixChanged of request req-811-478 has not arrived yet: cause not known until it does",
    );
  });

  it("explains a provider-side miss: stated reason, model switch, idle time", () => {
    expect(
      collapseCause(
        usage({ providerReport: report({ cacheMissReason: "cache entry evicted" }) }),
        unchanged,
        previous(),
      ),
    ).toBe("provider-side cache miss with our prefix unchanged: cache entry evicted");
    expect(collapseCause(usage(), unchanged, previous({ model: "glm-4.5" }))).toBe(
      "provider-side cache miss with our prefix unchanged: model switched glm-4.5→glm-4.6 (provider caches are per model)",
    );
    expect(collapseCause(usage(), unchanged, previous())).toBe(
      "provider-side cache miss with our prefix unchanged after 5m idle: cache TTL expiry or routing to another cache",
    );
    expect(collapseCause(usage(), unchanged, null)).toMatch(
      /^provider-side cache miss with our prefix unchanged: cache TTL/,
    );
  });
});

describe("sectionsOfCollapse", () => {
  const withChange = (change: Partial<PrefixChange>): PrefixJoin => ({
    observed: { firstBuild: false },
    change: { ...rulesChange, ...change },
  });

  it("counts every changed section once, tools or history when no section changed", () => {
    expect(
      sectionsOfCollapse(withChange({ changedSections: ["system-prompt", "skills", "subagent", "skills"] })),
    ).toEqual(["system-prompt", "skills", "subagent"]);
    expect(sectionsOfCollapse(withChange({ changedSections: [], toolsChanged: true, historyRewritten: true }))).toEqual(
      ["(tools)", "(history)"],
    );
    expect(sectionsOfCollapse(withChange({ changedSections: [] }))).toEqual([NO_SECTION]);
  });

  it("is (none) when our fingerprints saw no change and (unknown) before any fingerprint arrived", () => {
    expect(sectionsOfCollapse(unchanged)).toEqual(["(none)"]);
    expect(sectionsOfCollapse(NO_PREFIX_DATA)).toEqual(["(unknown)"]);
    expect(sectionsOfCollapse(changeOnItsWay)).toEqual(["(unknown)"]);
  });
});

describe("formatIdle", () => {
  it("prints seconds, minutes, hours and days", () => {
    expect(formatIdle(40_000)).toBe("40s");
    expect(formatIdle(12 * 60_000)).toBe("12m");
    expect(formatIdle(18.5 * 3_600_000)).toBe("18.5h");
    expect(formatIdle(3 * 86_400_000)).toBe("3d");
  });
});
