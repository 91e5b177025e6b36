import { describe, expect, it } from "vitest";
import { SESSION_811_COLLAPSE } from "../../test/seed-001-fixtures";
import { assessCall, explainCollapse } from "./call-assessment";
import { DEFAULT_COLLAPSE_THRESHOLDS } from "./collapse-detection";
import type { EarlierCall, PrefixJoin, UsageFacts } from "./model";
import { NO_PREFIX_DATA } from "./model";
import { SEED_001_PRICES } from "./pricing";

const T_13_11_11 = Date.UTC(2026, 9, 14, 5, 11, 11, 539);

const collapse811: UsageFacts = {
  ...SESSION_811_COLLAPSE,
  cacheCreation1hTokens: 0,
  requestId: "req-811-478",
  model: "glm-4.6",
  provider: "zhipu",
  reportedCost: null,
  providerReport: null,
  calledAtMs: T_13_11_11,
};

/** 811 before the collapse: a cold first call, then turns whose whole prompt was cached (the seed's hit state). */
function hitStateHistory(): EarlierCall[] {
  const calls: EarlierCall[] = [
    {
      promptTokens: 440_000,
      cachedTokens: 0,
      model: "glm-4.6",
      calledAtMs: T_13_11_11 - 3_600_000,
      firstOfSession: true,
    },
  ];
  for (let i = 5; i >= 1; i--)
    calls.push({
      promptTokens: 450_000,
      cachedTokens: 450_000,
      model: "glm-4.6",
      calledAtMs: T_13_11_11 - i * 310_000,
      firstOfSession: false,
    });
  return calls;
}

const rulesChanged: PrefixJoin = {
  observed: { firstBuild: false },
  change: {
    changedSections: ["workspace-rules"],
    toolsChanged: false,
    toolsChangeKind: "none",
    historyRewritten: false,
    cause: "new workspace-rules snapshot pinned",
  },
};

describe("assessCall on seed 001's session 811", () => {
  const input = {
    usage: collapse811,
    prices: SEED_001_PRICES,
    earlier: hitStateHistory(),
    thresholds: DEFAULT_COLLAPSE_THRESHOLDS,
  };

  it("finds the collapse, its cost 0.8953 against 0.023 expected, 0.872 extra, caused by workspace-rules", () => {
    const assessment = assessCall({ ...input, prefix: rulesChanged });
    expect(assessment.cost).toBeCloseTo(0.8953, 4);
    expect(assessment.attribution).toBe("agree");
    const collapse = assessment.collapse;
    expect(collapse).not.toBeNull();
    expect(collapse?.baselineShare).toBe(1);
    expect(collapse?.cachedShare).toBeCloseTo(0.0189, 4);
    expect(Math.abs((collapse?.expectedCost ?? 0) - 0.023)).toBeLessThan(0.0005);
    expect(Math.abs((collapse?.extraCost ?? 0) - 0.872)).toBeLessThan(0.001);
    expect(collapse).toMatchObject({
      changedSections: ["workspace-rules"],
      totalsSections: ["workspace-rules"],
      cause: "new workspace-rules snapshot pinned",
      ourVerdict: "changed",
      attribution: "none",
    });
  });

  it("codes a collapse on rules re-pinned on a cold cache (REPIN_WHEN_COLD) as the expiry, with the builder's cause", () => {
    const cause =
      "workspace-rules re-pinned on a cold cache (idle 12m outlived the 5m cache retention): the AGENTS.md edit held back since the last pin takes effect";
    const repinned: PrefixJoin = {
      observed: { firstBuild: false, rulesDecision: "REPINNED_COLD_CACHE" },
      change: { ...(rulesChanged.change as NonNullable<PrefixJoin["change"]>), cause },
    };
    const earlier = hitStateHistory();
    const usage = { ...collapse811, calledAtMs: (earlier.at(-1)?.calledAtMs ?? 0) + 12 * 60_000 };
    const collapse = assessCall({ ...input, usage, earlier, prefix: repinned }).collapse;
    expect(collapse).toMatchObject({
      causeCode: "ttl_expired",
      causeDisagreement: "",
      cause,
      changedSections: ["workspace-rules"],
      attribution: "none",
    });
    // The same change under a held snapshot stays a section change: the freeze should have kept it.
    expect(assessCall({ ...input, usage, earlier, prefix: rulesChanged }).collapse?.causeCode).toBe(
      "section_changed:workspace-rules",
    );
  });

  it("prices the expectation at the session's own norm when that is below 100%", () => {
    const earlier = hitStateHistory().map((call) =>
      call.firstOfSession ? call : { ...call, cachedTokens: Math.round(call.promptTokens * 0.998) },
    );
    const collapse = assessCall({ ...input, earlier, prefix: rulesChanged }).collapse;
    expect(collapse?.baselineShare).toBeCloseTo(0.998, 6);
    // 907 uncached × 2 + 452,662 cached × 0.04 + 621 × 8 per million
    expect(collapse?.expectedCost).toBeCloseTo(0.02488848, 6);
    expect(collapse?.extraCost).toBeCloseTo(0.8953 - 0.0249, 3);
  });

  it("joins later: without our fingerprint the cause is unknown, the late PrefixChanged explains it", () => {
    const early = assessCall({ ...input, prefix: NO_PREFIX_DATA });
    expect(early.collapse).toMatchObject({
      attribution: "unknown",
      totalsSections: ["(unknown)"],
      changedSections: [],
    });
    expect(early.collapse?.cause).toMatch(/no prompt\.prefix\.v1 fingerprint/);
    const late = explainCollapse(collapse811, rulesChanged, hitStateHistory().at(-1) ?? null);
    expect(late).toMatchObject({
      changedSections: ["workspace-rules"],
      totalsSections: ["workspace-rules"],
      cause: "new workspace-rules snapshot pinned",
      attribution: "none",
    });
  });

  it("attributes a miss behind an unchanged prefix to the provider, under (none)", () => {
    const usage = {
      ...collapse811,
      providerReport: {
        cacheMissReason: "cache TTL expired",
        cacheReadInputTokens: 0,
        cacheCreationInputTokens: 444_993,
        openaiCachedTokens: 0,
        rawJson: "",
      },
    };
    const collapse = assessCall({
      ...input,
      usage,
      prefix: { observed: { firstBuild: false }, change: null },
    }).collapse;
    expect(collapse).toMatchObject({
      attribution: "provider_only",
      totalsSections: ["(none)"],
      providerCacheMissReason: "cache TTL expired",
      cause: "provider-side cache miss with our prefix unchanged: cache TTL expired",
    });
  });

  it("bills the reported cost when the harness gives one", () => {
    const assessment = assessCall({ ...input, usage: { ...collapse811, reportedCost: 0.95 }, prefix: rulesChanged });
    expect(assessment.cost).toBe(0.95);
    expect(assessment.collapse?.extraCost).toBeCloseTo(0.95 - (assessment.collapse?.expectedCost ?? 0), 12);
  });

  it("does not flag a normal call or a session's first call", () => {
    const normal = { ...collapse811, cachedTokens: 452_000 };
    expect(assessCall({ ...input, usage: normal, prefix: rulesChanged })).toMatchObject({
      collapse: null,
      attribution: "ours_only",
    });
    const first = assessCall({ ...input, earlier: [], prefix: { observed: { firstBuild: true }, change: null } });
    expect(first.collapse).toBeNull();
    expect(first.detection).toMatchObject({ collapsed: false, reason: "first_call" });
  });

  it("flags a collapse the builder called a first build while the session has earlier calls: its monitor forgot", () => {
    const forgot = assessCall({ ...input, prefix: { observed: { firstBuild: true }, change: null } });
    expect(forgot.collapse).toMatchObject({
      totalsSections: ["(unknown)"],
      attribution: "unknown",
      ourVerdict: "first_build",
    });
    expect(forgot.collapse?.cause).toMatch(/called this a first build, but the session has earlier calls/);
    // Either arrival order ends the same: assessed without prefix data, then re-explained.
    const early = assessCall({ ...input, prefix: NO_PREFIX_DATA });
    const late = explainCollapse(
      collapse811,
      { observed: { firstBuild: true }, change: null },
      input.earlier.at(-1) ?? null,
    );
    expect(early.collapse).not.toBeNull();
    expect(late).toMatchObject({ totalsSections: ["(unknown)"], cause: forgot.collapse?.cause });
  });

  it("names what changed for a forgetful builder, from cache-monitor's own copy of the previous fingerprint", () => {
    const build = (rules: string, anchorDate: string, rulesDecision = "REREAD") => ({
      sections: [
        { key: "system-prompt", sha256: "a" },
        { key: "current-date", sha256: `date ${anchorDate}` },
        { key: "workspace-rules", sha256: rules },
      ],
      toolsHash: "t",
      rulesDecision,
      anchorDate,
      compactionGeneration: 0,
      model: "glm-4.6",
    });
    const recovered = assessCall({
      ...input,
      prefix: {
        observed: { firstBuild: true },
        change: null,
        forgotten: { previous: build("rules v1", "2026-10-13"), current: build("rules v2", "2026-10-14") },
      },
    });
    expect(recovered.collapse).toMatchObject({
      changedSections: ["current-date", "workspace-rules"],
      totalsSections: ["current-date", "workspace-rules"],
      attribution: "none",
      ourVerdict: "first_build",
    });
    expect(recovered.collapse?.cause).toBe(
      "prompt-assembly called this a first build, but the session has earlier calls: its prefix monitor lost the session's state (a process-local monitor after a restart?); cache-monitor's comparison with the session's previous build: current-date changed: date 2026-10-13→2026-10-14; workspace-rules changed (rulesDecision=REREAD)",
    );
    // Identical sections and tools leave only history, which fingerprints cannot compare: unknown.
    const same = build("rules v1", "2026-10-13");
    const unexplained = assessCall({
      ...input,
      prefix: { observed: { firstBuild: true }, change: null, forgotten: { previous: same, current: same } },
    });
    expect(unexplained.collapse).toMatchObject({ totalsSections: ["(unknown)"], attribution: "unknown" });
    expect(unexplained.collapse?.cause).toMatch(/finds the system sections and tools unchanged/);
  });
});

describe("explainCollapse's cause code", () => {
  const unchanged: PrefixJoin = { observed: { firstBuild: false }, change: null };
  const previous = (overrides: Partial<EarlierCall> = {}): EarlierCall => ({
    promptTokens: 450_000,
    cachedTokens: 450_000,
    model: "glm-4.6",
    calledAtMs: T_13_11_11 - 60_000,
    firstOfSession: false,
    ...overrides,
  });

  it("names seed 001's collapse by its first changed section", () => {
    expect(explainCollapse(collapse811, rulesChanged, previous())).toMatchObject({
      causeCode: "section_changed:workspace-rules",
      causeDisagreement: "",
    });
  });

  it("reads the gap since the previous call against the retention that call left", () => {
    const sixMinutes = previous({ calledAtMs: T_13_11_11 - 6 * 60_000 });
    expect(explainCollapse(collapse811, unchanged, sixMinutes).causeCode).toBe("ttl_expired");
    expect(explainCollapse(collapse811, unchanged, { ...sixMinutes, cacheCreation1hTokens: 4_096 }).causeCode).toBe(
      "provider_only",
    );
    expect(explainCollapse(collapse811, unchanged, previous()).causeCode).toBe("provider_only");
  });

  it("names a model switch from the two usages", () => {
    expect(explainCollapse(collapse811, unchanged, previous({ model: "glm-4.5" })).causeCode).toBe("model_changed");
  });

  it("keeps the provider's reason and flags it when our fingerprints saw no change", () => {
    const withReason: UsageFacts = {
      ...collapse811,
      providerReport: {
        cacheMissReason: "system_changed",
        cacheReadInputTokens: 0,
        cacheCreationInputTokens: 0,
        openaiCachedTokens: 0,
        rawJson: "",
      },
    };
    expect(explainCollapse(withReason, unchanged, previous())).toMatchObject({
      causeCode: "provider_only",
      providerCacheMissReason: "system_changed",
      causeDisagreement: "provider says system_changed; our fingerprints saw no change",
    });
  });

  it("is unknown until the build's fingerprint arrives", () => {
    expect(explainCollapse(collapse811, NO_PREFIX_DATA, previous()).causeCode).toBe("unknown");
  });
});
