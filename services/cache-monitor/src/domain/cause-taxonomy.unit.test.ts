import { describe, expect, it } from "vitest";
import {
  CAUSE_ADVICE,
  CAUSE_CODES,
  type CauseEvidence,
  causeKindOf,
  classifyCause,
  type OurChange,
  providerReasonKindOf,
} from "./cause-taxonomy";
import { expiredAfter, retentionInForce } from "./retention";

const MINUTE = 60_000;
const noChange: OurChange | null = null;
const sections = (...keys: string[]): OurChange => ({
  changedSections: keys,
  toolsChanged: false,
  historyRewritten: false,
});
const tools: OurChange = { changedSections: [], toolsChanged: true, historyRewritten: false };
const history: OurChange = { changedSections: [], toolsChanged: false, historyRewritten: true };
const namesNothing: OurChange = { changedSections: [], toolsChanged: false, historyRewritten: false };

function evidence(overrides: Partial<CauseEvidence> = {}): CauseEvidence {
  return {
    ours: "unchanged",
    change: noChange,
    providerReason: "",
    modelSwitch: null,
    idleMs: MINUTE,
    retention: "5m",
    ...overrides,
  };
}

const switched = { from: "claude-a", to: "claude-b" };

describe("classifyCause", () => {
  // [name, evidence, code, disagreement ("" = none; otherwise a substring it must contain)]
  const table: [string, Partial<CauseEvidence>, string, string][] = [
    // Our fingerprints alone.
    [
      "one section changed",
      { ours: "changed", change: sections("workspace-rules") },
      "section_changed:workspace-rules",
      "",
    ],
    [
      "first section in prefix order",
      { ours: "changed", change: sections("system", "current-date") },
      "section_changed:system",
      "",
    ],
    [
      "section wins over tools and history",
      { ours: "changed", change: { changedSections: ["a"], toolsChanged: true, historyRewritten: true } },
      "section_changed:a",
      "",
    ],
    ["tools changed", { ours: "changed", change: tools }, "tools_changed", ""],
    ["history rewritten", { ours: "changed", change: history }, "history_rewritten", ""],
    ["a change that names nothing", { ours: "changed", change: namesNothing }, "unknown", ""],
    ["nothing changed, nothing else known", {}, "provider_only", ""],
    ["no fingerprint yet", { ours: "unknown" }, "unknown", ""],
    ["builder forgot the session, nothing recovered", { ours: "first_build" }, "unknown", ""],
    // A model switch empties the whole cache and is seen in the usages: it comes first.
    ["model switched", { modelSwitch: switched }, "model_changed", ""],
    [
      "model switched beats our section change",
      { ours: "changed", change: sections("x"), modelSwitch: switched },
      "model_changed",
      "",
    ],
    ["gap past 5m retention", { idleMs: 6 * MINUTE }, "ttl_expired", ""],
    ["gap exactly at the retention is no expiry", { idleMs: 5 * MINUTE }, "provider_only", ""],
    ["gap within 1h retention", { idleMs: 30 * MINUTE, retention: "1h" }, "provider_only", ""],
    ["gap past 1h retention", { idleMs: 61 * MINUTE, retention: "1h" }, "ttl_expired", ""],
    ["gap past 24h retention", { idleMs: 25 * 60 * MINUTE, retention: "24h" }, "ttl_expired", ""],
    [
      "our section change beats expiry (the retention is inferred)",
      { ours: "changed", change: sections("x"), idleMs: 6 * MINUTE },
      "section_changed:x",
      "",
    ],
    ["model beats expiry", { modelSwitch: switched, idleMs: 6 * MINUTE }, "model_changed", ""],
    ["expiry with no fingerprint yet", { ours: "unknown", idleMs: 6 * MINUTE }, "ttl_expired", ""],
    [
      "provider's system_changed after an expiry",
      { idleMs: 6 * MINUTE, providerReason: "system_changed" },
      "ttl_expired",
      "our fingerprints saw no change",
    ],
    ["no previous call: no expiry", { idleMs: null }, "provider_only", ""],
    // The provider's reason where our fingerprints name nothing.
    [
      "provider: tools_changed, we saw no change",
      { providerReason: "tools_changed" },
      "tools_changed",
      "provider says tools_changed; our fingerprints saw no change",
    ],
    [
      "provider: messages_changed, we saw no change",
      { providerReason: "messages_changed" },
      "history_rewritten",
      "our fingerprints saw no change",
    ],
    [
      "provider: system_changed, we saw no change",
      { providerReason: "system_changed" },
      "provider_only",
      "provider says system_changed; our fingerprints saw no change",
    ],
    [
      "provider: model_changed, same model",
      { providerReason: "model_changed" },
      "model_changed",
      "the session's model did not change",
    ],
    ["provider: an unknown reason", { providerReason: "routing_changed" }, "provider_only", ""],
    [
      "provider: tools_changed, no fingerprint yet",
      { ours: "unknown", providerReason: "tools_changed" },
      "tools_changed",
      "",
    ],
    [
      "provider: system_changed, no fingerprint yet",
      { ours: "unknown", providerReason: "system_changed" },
      "provider_only",
      "",
    ],
    [
      "provider: an expiry within our retention",
      { providerReason: "cache_expired", idleMs: 2 * MINUTE },
      "ttl_expired",
      "2m earlier, within the 5m retention",
    ],
    // Agreement between the two.
    [
      "system_changed agrees with a section",
      { ours: "changed", change: sections("system"), providerReason: "system_changed" },
      "section_changed:system",
      "",
    ],
    [
      "tools_changed agrees with tools",
      { ours: "changed", change: tools, providerReason: "tools_changed" },
      "tools_changed",
      "",
    ],
    [
      "messages_changed agrees with history",
      { ours: "changed", change: history, providerReason: "messages_changed" },
      "history_rewritten",
      "",
    ],
    [
      "messages_changed agrees with a section rendered into messages",
      { ours: "changed", change: sections("current-date"), providerReason: "messages_changed" },
      "section_changed:current-date",
      "",
    ],
    [
      "model_changed agrees with a switch",
      { modelSwitch: switched, providerReason: "model_changed" },
      "model_changed",
      "",
    ],
    ["provider expiry agrees with ours", { providerReason: "cache_expired", idleMs: 6 * MINUTE }, "ttl_expired", ""],
    // Disagreement between the two: both kept.
    [
      "tools_changed vs our section",
      { ours: "changed", change: sections("rules"), providerReason: "tools_changed" },
      "section_changed:rules",
      "provider says tools_changed; our fingerprints saw section_changed:rules",
    ],
    [
      "system_changed vs our tools",
      { ours: "changed", change: tools, providerReason: "system_changed" },
      "tools_changed",
      "our fingerprints saw tools_changed",
    ],
    [
      "system_changed vs our history",
      { ours: "changed", change: history, providerReason: "system_changed" },
      "history_rewritten",
      "our fingerprints saw history_rewritten",
    ],
    [
      "model_changed vs our section, same model",
      { ours: "changed", change: sections("a"), providerReason: "model_changed" },
      "section_changed:a",
      "the session's model did not change",
    ],
    [
      "provider's tools_changed beats an expiry",
      { idleMs: 6 * MINUTE, providerReason: "tools_changed" },
      "tools_changed",
      "our fingerprints saw no change",
    ],
  ];

  it.each(table)("%s", (_name, overrides, code, disagreement) => {
    const verdict = classifyCause(evidence(overrides));
    expect(verdict.code).toBe(code);
    if (disagreement === "") expect(verdict.disagreement).toBe("");
    else expect(verdict.disagreement).toContain(disagreement);
    expect(verdict.providerReason).toBe((overrides.providerReason ?? "").trim());
  });

  it("covers every code of the closed list", () => {
    const produced = new Set(table.map(([, overrides]) => causeKindOf(classifyCause(evidence(overrides)).code)));
    expect([...produced].sort()).toEqual([...CAUSE_CODES].sort());
  });

  it("names nothing but a model switch while our announced PrefixChanged is on its way", () => {
    // Our change ranks above the provider's reason and the expiry: naming either now would be
    // contradicted by the record once the PrefixChanged arrives.
    const awaited = { ours: "unknown" as const, changeAwaited: true };
    expect(classifyCause(evidence(awaited)).code).toBe("unknown");
    expect(classifyCause(evidence({ ...awaited, idleMs: 6 * MINUTE })).code).toBe("unknown");
    expect(classifyCause(evidence({ ...awaited, providerReason: "tools_changed" })).code).toBe("unknown");
    expect(classifyCause(evidence({ ...awaited, modelSwitch: switched })).code).toBe("model_changed");
    // Without the announcement, an unknown verdict still lets the expiry speak.
    expect(classifyCause(evidence({ ours: "unknown", idleMs: 6 * MINUTE })).code).toBe("ttl_expired");
  });

  it("calls the rules re-pinned on a cold cache (REPIN_WHEN_COLD) an expiry, not a section change", () => {
    const repinned = {
      ours: "changed" as const,
      change: sections("workspace-rules"),
      rulesDecision: "REPINNED_COLD_CACHE",
      idleMs: 12 * MINUTE,
    };
    expect(classifyCause(evidence(repinned))).toEqual({ code: "ttl_expired", providerReason: "", disagreement: "" });
    // The provider naming its system prompt changed agrees: our rules section is in it.
    expect(classifyCause(evidence({ ...repinned, providerReason: "system_changed" }))).toMatchObject({
      code: "ttl_expired",
      disagreement: "",
    });
    // The same section change under a held snapshot is ours to avoid.
    expect(classifyCause(evidence({ ...repinned, rulesDecision: "RETAINED" })).code).toBe(
      "section_changed:workspace-rules",
    );
    // Our own gap says the previous call was within the retention: the re-pin broke a warm cache.
    expect(classifyCause(evidence({ ...repinned, idleMs: 2 * MINUTE })).code).toBe("section_changed:workspace-rules");
    // Anything else of ours that moved in the same build is still named.
    expect(classifyCause(evidence({ ...repinned, change: sections("skills", "workspace-rules") })).code).toBe(
      "section_changed:skills",
    );
    expect(classifyCause(evidence({ ...repinned, modelSwitch: switched })).code).toBe("model_changed");
  });

  it("keeps the provider's reason verbatim, trimmed", () => {
    expect(classifyCause(evidence({ providerReason: "  system_changed " })).providerReason).toBe("system_changed");
  });
});

describe("providerReasonKindOf", () => {
  it.each([
    ["system_changed", "system"],
    ["tools_changed", "tools"],
    ["messages_changed", "messages"],
    ["model_changed", "model"],
    ["instructions_changed", "system"],
    ["input_changed", "messages"],
    ["cache_evicted", "expired"],
    ["something_new", "other"],
    ["SYSTEM_CHANGED", "system"],
  ])("%s → %s", (reason, kind) => {
    expect(providerReasonKindOf(reason)).toBe(kind);
  });

  it("reads an empty reason as no reason", () => {
    expect(providerReasonKindOf("  ")).toBeNull();
  });
});

describe("retention", () => {
  it("is 1h after a call that wrote 1-hour entries, else the 5-minute default", () => {
    expect(retentionInForce({ cacheCreation1hTokens: 12 })).toBe("1h");
    expect(retentionInForce({ cacheCreation1hTokens: 0 })).toBe("5m");
    expect(retentionInForce({})).toBe("5m");
    expect(retentionInForce(null)).toBe("5m");
  });

  it("is the retention the previous call's build opted into, before anything inferred from its writes", () => {
    expect(retentionInForce({ cacheRetention: "24h" })).toBe("24h");
    expect(retentionInForce({ cacheRetention: "1h", cacheCreation1hTokens: 0 })).toBe("1h");
    expect(retentionInForce({ cacheRetention: "in_memory", cacheCreation1hTokens: 12 })).toBe("5m");
    expect(retentionInForce({ cacheRetention: "5m" })).toBe("5m");
    // Nothing opted (or a value no provider sells): back to what the usage shows.
    expect(retentionInForce({ cacheRetention: "", cacheCreation1hTokens: 12 })).toBe("1h");
    expect(retentionInForce({ cacheRetention: "forever" })).toBe("5m");
  });

  it("expires strictly after the TTL", () => {
    expect(expiredAfter(5 * MINUTE, "5m")).toBe(false);
    expect(expiredAfter(5 * MINUTE + 1, "5m")).toBe(true);
    expect(expiredAfter(24 * 60 * MINUTE + 1, "24h")).toBe(true);
  });
});

it("has advice for every kind", () => {
  for (const kind of CAUSE_CODES) expect(CAUSE_ADVICE[kind].length).toBeGreaterThan(20);
});
