import { describe, expect, it } from "vitest";
import { fingerprintRequest } from "./fingerprint";
import type { ChatMessage, ChatRequest, SystemSection, ToolDefinition } from "./model";
import {
  type CauseHints,
  comparePrefix,
  formatPrefixChangedLog,
  type PrefixComparison,
  prefixBreaksOf,
} from "./prefix-monitor";

const hashOf = (text: string): string => `h(${text})`;

const SEED_LOG = "prefix changed session=811 changedSections=[workspace-rules] toolsChanged=false messages=478";

const tools: readonly ToolDefinition[] = [
  { name: "shell", description: "Run", inputSchema: { type: "object" } },
  { name: "read_file", description: "Read", inputSchema: { type: "object" } },
];

const sections: readonly SystemSection[] = [
  { key: "system-prompt", text: "You are an agent." },
  { key: "skills", text: "skill list v1" },
  { key: "current-date", text: "当前日期:`2026-10-12`" },
  { key: "workspace-rules", text: "rules v1" },
];

function userText(text: string): ChatMessage {
  return { role: "user", content: [{ type: "text", text }] };
}

const history: readonly ChatMessage[] = [userText("one"), userText("two"), userText("three")];

function fingerprint(overrides: Partial<ChatRequest> = {}) {
  return fingerprintRequest({ model: "m", system: sections, tools, messages: history, ...overrides }, hashOf);
}

function replaceSection(key: string, text: string): SystemSection[] {
  return sections.map((section) => (section.key === key ? { key, text } : section));
}

const steady: CauseHints = {
  compactionGenerationBefore: 2,
  compactionGenerationNow: 2,
  rulesDecision: "RETAINED",
  droppedTurnsBefore: 0,
  droppedTurnsNow: 0,
  anchorDateBefore: "2026-10-12",
  anchorDateNow: "2026-10-12",
};

describe("comparePrefix", () => {
  it("calls a compaction's rewrite and re-pin expected, and anything else that changes the prefix avoidable", () => {
    const compacted = { ...steady, compactionGenerationNow: 3, rulesDecision: "REPINNED_STALE_GENERATION" as const };
    const rewritten = fingerprint({
      system: replaceSection("workspace-rules", "rules v2"),
      messages: [userText("summary"), userText("three")],
    });
    expect(comparePrefix(fingerprint(), rewritten, compacted)).toMatchObject({ changed: true, expected: true });
    // The same rewrite without a compaction, or a compaction that also moved a harness section, is not.
    expect(comparePrefix(fingerprint(), rewritten, steady)).toMatchObject({ changed: true, expected: false });
    const skillsToo = fingerprint({
      system: replaceSection("skills", "skill list v2"),
      messages: [userText("summary")],
    });
    expect(comparePrefix(fingerprint(), skillsToo, compacted)).toMatchObject({ changed: true, expected: false });
    expect(comparePrefix(fingerprint(), fingerprint(), steady)).toMatchObject({ changed: false, expected: true });
  });

  it.each([
    ["PINNED", 2, "new workspace-rules snapshot pinned"],
    ["PINNED", 3, "new workspace-rules snapshot after compaction generation 3"],
    ["REPINNED_STALE_GENERATION", 3, "new workspace-rules snapshot after compaction generation 3"],
    [
      "REPINNED_WORKSPACE_MISMATCH",
      2,
      "new workspace-rules snapshot pinned for another workspace (the snapshot held was of a different workspace)",
    ],
    ["DEGRADED_RAW", 2, "workspace-rules degraded to raw text (snapshot store unavailable)"],
    ["RETAINED_DISK_CHANGED", 2, "workspace-rules changed (rulesDecision=RETAINED_DISK_CHANGED)"],
  ] as const)(
    "explains a changed workspace-rules section under %s (generation %i) in its own words",
    (decision, generation, cause) => {
      const comparison = comparePrefix(
        fingerprint(),
        fingerprint({ system: replaceSection("workspace-rules", "rules v2") }),
        { ...steady, rulesDecision: decision, compactionGenerationNow: generation },
      );
      expect(comparison.cause).toBe(cause);
    },
  );

  it("names an operator's refresh and its reason, as a deliberate change rather than an avoidable one", () => {
    const refreshed = { ...steady, rulesDecision: "REPINNED_OPERATOR_REFRESH" as const, rulesRefreshReason: "INC-42" };
    const rulesOnly = fingerprint({ system: replaceSection("workspace-rules", "rules v2") });
    expect(comparePrefix(fingerprint(), rulesOnly, refreshed)).toMatchObject({
      changed: true,
      expected: true,
      cause: "new workspace-rules snapshot pinned after an operator refresh (reason: INC-42)",
    });
    // A harness section that moved in the same build is still avoidable.
    const skillsToo = fingerprint({
      system: replaceSection("skills", "skill list v2").map((s) =>
        s.key === "workspace-rules" ? { ...s, text: "rules v2" } : s,
      ),
    });
    expect(comparePrefix(fingerprint(), skillsToo, refreshed)).toMatchObject({ changed: true, expected: false });
  });

  it("names a re-pin on a cold cache with its gap, as expected, and counts its break expected", () => {
    const cold = {
      ...steady,
      rulesDecision: "REPINNED_COLD_CACHE" as const,
      coldCache: { idleMs: 12 * 60_000 + 30_000, retention: "5m" as const },
    };
    const rulesOnly = fingerprint({ system: replaceSection("workspace-rules", "rules v2") });
    const comparison = comparePrefix(fingerprint(), rulesOnly, cold);
    expect(comparison).toMatchObject({
      changed: true,
      expected: true,
      changedSections: ["workspace-rules"],
      cause:
        "workspace-rules re-pinned on a cold cache (idle 12m outlived the 5m cache retention): the AGENTS.md edit held back since the last pin takes effect",
    });
    expect(prefixBreaksOf(comparison)).toEqual([
      { section: "workspace-rules", cause: "section_changed", expected: true },
    ]);
    // The same change under a retained snapshot is the avoidable break the freeze exists to prevent.
    expect(comparePrefix(fingerprint(), rulesOnly, steady)).toMatchObject({ changed: true, expected: false });
    // Anything else that moved in the same build is still avoidable.
    const skillsToo = fingerprint({
      system: replaceSection("skills", "skill list v2").map((s) =>
        s.key === "workspace-rules" ? { ...s, text: "rules v2" } : s,
      ),
    });
    expect(comparePrefix(fingerprint(), skillsToo, cold)).toMatchObject({ changed: true, expected: false });
  });

  it("reports a first build without calling it a change", () => {
    const comparison = comparePrefix(null, fingerprint(), steady);
    expect(comparison).toMatchObject({
      firstBuild: true,
      changed: false,
      changedSections: [],
      historyRewritten: false,
    });
  });

  it("finds nothing when the request is identical", () => {
    const comparison = comparePrefix(fingerprint(), fingerprint(), steady);
    expect(comparison).toMatchObject({
      firstBuild: false,
      changed: false,
      changedSections: [],
      toolsChanged: false,
      toolsChangeKind: "none",
      historyRewritten: false,
      firstChangedMessageIndex: null,
    });
  });

  it("names the one section that changed", () => {
    const comparison = comparePrefix(
      fingerprint(),
      fingerprint({ system: replaceSection("workspace-rules", "rules v2") }),
      { ...steady, compactionGenerationNow: 3, rulesDecision: "REPINNED_STALE_GENERATION" },
    );
    expect(comparison.changed).toBe(true);
    expect(comparison.changedSections).toEqual(["workspace-rules"]);
    expect(comparison.toolsChanged).toBe(false);
    expect(comparison.cause).toBe("new workspace-rules snapshot after compaction generation 3");
  });

  it("explains a degraded rules section and a changed harness section", () => {
    const current = fingerprint({
      system: replaceSection("workspace-rules", "raw rules").map((section) =>
        section.key === "skills" ? { key: "skills", text: "skill list v2" } : section,
      ),
    });
    const comparison = comparePrefix(fingerprint(), current, { ...steady, rulesDecision: "DEGRADED_RAW" });
    expect(comparison.changedSections).toEqual(["skills", "workspace-rules"]);
    expect(comparison.cause).toBe(
      "harness section `skills` changed; workspace-rules degraded to raw text (snapshot store unavailable)",
    );
  });

  it("lists added sections in current order and removed ones after them", () => {
    const previous = fingerprint({ system: sections.filter((section) => section.key !== "skills") });
    const current = fingerprint({ system: sections.filter((section) => section.key !== "current-date") });
    const comparison = comparePrefix(previous, current, steady);
    expect(comparison.changedSections).toEqual(["skills", "current-date"]);
    expect(comparison.cause).toBe("harness section `skills` added; harness section `current-date` removed");
  });

  it("treats a section whose text became empty as removed, since it is no longer sent", () => {
    const comparison = comparePrefix(fingerprint(), fingerprint({ system: replaceSection("skills", "") }), steady);
    expect(comparison.changedSections).toEqual(["skills"]);
    expect(comparison.cause).toContain("removed");
  });

  it("explains a moved current-date anchor", () => {
    const comparison = comparePrefix(
      fingerprint(),
      fingerprint({ system: replaceSection("current-date", "当前日期:`2026-10-13`"), messages: history.slice(1) }),
      { ...steady, anchorDateNow: "2026-10-13" },
    );
    expect(comparison.changedSections).toEqual(["current-date"]);
    expect(comparison.cause.split("; ")[0]).toBe(
      "current-date anchor moved 2026-10-12→2026-10-13 (first user message deleted)",
    );
    expect(comparison.historyRewritten).toBe(true);
    expect(comparison.firstChangedMessageIndex).toBe(0);
  });

  it("explains a decision rules-snapshot does not make, and a date it did not anchor, in their sources' words", () => {
    const ownWords: CauseHints = {
      ...steady,
      rulesDecision: "FROM_DISK",
      rulesChange: { added: "rules appeared on disk", changed: "rules edited on disk" },
      explainDateChange: (before, now) => `current-date set by the clock ${before ?? "none"}→${now}`,
      anchorDateNow: "2026-10-13",
    };
    const comparison = comparePrefix(
      fingerprint(),
      fingerprint({
        system: replaceSection("current-date", "当前日期:`2026-10-13`").map((section) =>
          section.key === "workspace-rules" ? { key: "workspace-rules", text: "rules v2" } : section,
        ),
      }),
      ownWords,
    );
    expect(comparison.changedSections).toEqual(["current-date", "workspace-rules"]);
    expect(comparison.cause.split("; ")).toEqual([
      "current-date set by the clock 2026-10-12→2026-10-13",
      "rules edited on disk",
    ]);
    expect(comparison.expected).toBe(false);
    const added = comparePrefix(fingerprint({ system: sections.slice(0, 3) }), fingerprint(), ownWords);
    expect(added.cause).toBe("rules appeared on disk");
    const removed = comparePrefix(fingerprint(), fingerprint({ system: sections.slice(0, 3) }), ownWords);
    expect(removed.cause).toBe("workspace-rules section removed (rulesDecision=FROM_DISK)");
    // A name rules-snapshot does not know, without sentences of its own, is named as it came.
    const unexplained = comparePrefix(fingerprint(), fingerprint({ system: replaceSection("workspace-rules", "v2") }), {
      ...steady,
      rulesDecision: "FROM_DISK",
    });
    expect(unexplained.cause).toBe("workspace-rules changed (rulesDecision=FROM_DISK)");
  });

  it("calls reordered tools order_only and edited tools definitions", () => {
    const reordered = comparePrefix(fingerprint(), fingerprint({ tools: [...tools].reverse() }), steady);
    expect(reordered).toMatchObject({ changed: true, toolsChanged: true, toolsChangeKind: "order_only" });
    expect(reordered.cause).toBe("tool order changed (order_only)");
    const edited = comparePrefix(
      fingerprint(),
      fingerprint({ tools: [...tools, { name: "grep", description: "Search", inputSchema: { type: "object" } }] }),
      steady,
    );
    expect(edited).toMatchObject({
      toolsChanged: true,
      toolsChangeKind: "definitions",
      cause: "tool definitions changed",
    });
  });

  it("does not call an appended history a rewrite", () => {
    const comparison = comparePrefix(fingerprint(), fingerprint({ messages: [...history, userText("four")] }), steady);
    expect(comparison).toMatchObject({ changed: false, historyRewritten: false, firstChangedMessageIndex: null });
  });

  it("calls a changed first message a rewrite and blames compaction when the generation moved", () => {
    const comparison = comparePrefix(
      fingerprint(),
      fingerprint({ messages: [userText("summary of one..two"), ...history.slice(2)] }),
      { ...steady, compactionGenerationNow: 3 },
    );
    expect(comparison).toMatchObject({ changed: true, historyRewritten: true, firstChangedMessageIndex: 0 });
    expect(comparison.cause).toBe("history rewritten: compaction generation 2→3");
  });

  it("blames the budget when more turns were dropped, and an edit otherwise", () => {
    const dropped = comparePrefix(fingerprint(), fingerprint({ messages: history.slice(1) }), {
      ...steady,
      droppedTurnsNow: 1,
    });
    expect(dropped.cause).toBe("history rewritten: oldest turns dropped (budget)");
    const edited = comparePrefix(
      fingerprint(),
      fingerprint({ messages: [history[0] as ChatMessage, userText("two, edited"), history[2] as ChatMessage] }),
      steady,
    );
    expect(edited.firstChangedMessageIndex).toBe(1);
    expect(edited.cause).toBe("history rewritten at message 1 (message edited or deleted)");
  });

  it("calls a removed last message a rewrite at its index", () => {
    const comparison = comparePrefix(fingerprint(), fingerprint({ messages: history.slice(0, 2) }), steady);
    expect(comparison).toMatchObject({ historyRewritten: true, firstChangedMessageIndex: 2 });
  });

  it("is deterministic", () => {
    const current = fingerprint({ system: replaceSection("skills", "v2"), tools: [...tools].reverse() });
    expect(comparePrefix(fingerprint(), current, steady)).toEqual(comparePrefix(fingerprint(), current, steady));
  });
});

describe("prefixBreaksOf", () => {
  it("counts a compaction's re-pin as expected and the same re-pin without a compaction as avoidable", () => {
    const compacted = { ...steady, compactionGenerationNow: 3, rulesDecision: "REPINNED_STALE_GENERATION" as const };
    const rewritten = fingerprint({
      system: replaceSection("workspace-rules", "rules v2"),
      messages: [userText("summary"), userText("three")],
    });
    expect(prefixBreaksOf(comparePrefix(fingerprint(), rewritten, compacted))).toEqual([
      { section: "workspace-rules", cause: "section_changed", expected: true },
      { section: "history", cause: "history_rewritten", expected: true },
    ]);
    const repinOnly = fingerprint({ system: replaceSection("workspace-rules", "rules v2") });
    expect(prefixBreaksOf(comparePrefix(fingerprint(), repinOnly, steady))).toEqual([
      { section: "workspace-rules", cause: "section_changed", expected: false },
    ]);
  });

  it("names tools and model as their own sections and has nothing for an unchanged prefix", () => {
    const moved = fingerprint({ model: "m2", tools: [...tools].reverse() });
    expect(prefixBreaksOf(comparePrefix(fingerprint(), moved, steady))).toEqual([
      { section: "tools", cause: "tools_changed", expected: false },
      { section: "model", cause: "model_changed", expected: false },
    ]);
    expect(prefixBreaksOf(comparePrefix(fingerprint(), fingerprint(), steady))).toEqual([]);
    expect(prefixBreaksOf(comparePrefix(null, fingerprint(), steady))).toEqual([]);
  });
});

describe("formatPrefixChangedLog", () => {
  it("writes the seed's line with the cause appended", () => {
    const comparison = comparePrefix(
      fingerprint(),
      fingerprint({ system: replaceSection("workspace-rules", "rules v2") }),
      { ...steady, compactionGenerationNow: 3, rulesDecision: "REPINNED_STALE_GENERATION" },
    );
    expect(formatPrefixChangedLog("811", comparison, 478)).toBe(
      `${SEED_LOG} cause="new workspace-rules snapshot after compaction generation 3"`,
    );
  });

  it("joins several sections without spaces and quotes the cause safely", () => {
    const comparison: PrefixComparison = {
      firstBuild: false,
      changed: true,
      modelChanged: false,
      changedSections: ["system-prompt", "skills", "subagent"],
      toolsChanged: true,
      toolsChangeKind: "definitions",
      historyRewritten: false,
      expected: false,
      firstChangedMessageIndex: null,
      cause: 'harness section `skills` changed "quoted"\nnext',
    };
    const line = formatPrefixChangedLog("756", comparison, 621);
    expect(
      line.startsWith(
        "prefix changed session=756 changedSections=[system-prompt,skills,subagent] toolsChanged=true messages=621 cause=",
      ),
    ).toBe(true);
    expect(line).not.toContain("\n");
    expect(JSON.parse(line.slice(line.indexOf("cause=") + "cause=".length))).toBe(comparison.cause);
  });
});
