import { describe, expect, it } from "vitest";
import { type BuildSnapshot, changedSectionKeys, historyRewritten, PrefixChangeLedger } from "./accounting";

const SECTIONS = [
  { key: "persona", sha256: "p1" },
  { key: "current-date", sha256: "d1" },
  { key: "workspace-rules", sha256: "r1" },
];
const noChange = {
  changed: false,
  changedSections: [],
  toolsChanged: false,
  historyRewritten: false,
  cause: "no change",
  firstBuild: false,
};

function build(overrides: Partial<BuildSnapshot> = {}): BuildSnapshot {
  return {
    sessionId: "s1",
    sections: SECTIONS,
    toolsHash: "t1",
    messages: ["u1"],
    generation: 0,
    prefix: { ...noChange, firstBuild: true, cause: "first build" },
    ...overrides,
  };
}

const withSection = (key: string, sha256: string) =>
  SECTIONS.map((section) => (section.key === key ? { key, sha256 } : section));

describe("changedSectionKeys / historyRewritten", () => {
  it("names changed, added and removed sections", () => {
    expect(changedSectionKeys(SECTIONS, withSection("current-date", "d2"))).toEqual(["current-date"]);
    expect(changedSectionKeys(SECTIONS, [...SECTIONS, { key: "skills", sha256: "k" }])).toEqual(["skills"]);
    expect(changedSectionKeys(SECTIONS, SECTIONS.slice(0, 2))).toEqual(["workspace-rules"]);
  });

  it("tells appending from rewriting", () => {
    expect(historyRewritten(["a", "b"], ["a", "b", "c"])).toBe(false);
    expect(historyRewritten(["a", "b"], ["a", "x", "c"])).toBe(true);
    expect(historyRewritten(["a", "b"], ["a"])).toBe(true);
  });
});

describe("PrefixChangeLedger", () => {
  it("counts a session's first build as unavoidable and an append as no change", () => {
    const ledger = new PrefixChangeLedger();
    expect(ledger.record(build()).observed).toEqual({ kind: "unavoidable", cause: "first-build", sections: [] });
    const next = ledger.record(build({ messages: ["u1", "a1", "u2"], prefix: noChange }));
    expect(next).toEqual({ observed: { kind: "none" }, monitor: { kind: "none" } });
  });

  it("counts a rules or date change without compaction as avoidable, by section", () => {
    const ledger = new PrefixChangeLedger();
    ledger.record(build());
    const verdicts = ledger.record(
      build({
        sections: withSection("workspace-rules", "r2").map((s) =>
          s.key === "current-date" ? { ...s, sha256: "d2" } : s,
        ),
        messages: ["u1", "a1", "u2"],
        prefix: { ...noChange, changed: true, changedSections: ["current-date", "workspace-rules"] },
      }),
    );
    expect(verdicts.observed).toEqual({ kind: "avoidable", sections: ["current-date", "workspace-rules"] });
    expect(verdicts.monitor).toEqual({ kind: "avoidable", sections: ["current-date", "workspace-rules"] });
    expect(ledger.summary().observed.avoidableBySection).toEqual({ "current-date": 1, "workspace-rules": 1 });
  });

  it("counts whatever changes with a compaction as unavoidable", () => {
    const ledger = new PrefixChangeLedger();
    ledger.record(build({ messages: ["u1", "a1", "u2", "a2"] }));
    const verdicts = ledger.record(
      build({
        sections: withSection("workspace-rules", "r2"),
        messages: ["summary+u2", "a2", "u3"],
        generation: 1,
        prefix: { ...noChange, changed: true, changedSections: ["workspace-rules"], historyRewritten: true },
      }),
    );
    expect(verdicts.observed).toEqual({
      kind: "unavoidable",
      cause: "compaction",
      sections: ["workspace-rules", "history"],
    });
    expect(verdicts.monitor.kind).toBe("unavoidable");
    expect(ledger.summary().observed).toMatchObject({ avoidable: 0, unavoidable: 2 });
  });

  it("sees through a monitor that forgot: a known session's 'first build' is a monitor reset, the bytes still show the edit", () => {
    const ledger = new PrefixChangeLedger();
    ledger.record(build());
    const afterRestart = ledger.record(
      build({
        sections: withSection("workspace-rules", "r2"),
        messages: ["u1", "a1", "u2"],
        prefix: { ...noChange, firstBuild: true, cause: "first build" },
      }),
    );
    expect(afterRestart.monitor).toEqual({ kind: "avoidable", sections: ["monitor-reset"] });
    expect(afterRestart.observed).toEqual({ kind: "avoidable", sections: ["workspace-rules"] });
  });

  it("counts a history rewrite or a tools change without compaction as avoidable", () => {
    const ledger = new PrefixChangeLedger();
    ledger.record(build({ messages: ["u1", "a1"] }));
    const verdicts = ledger.record(build({ messages: ["u1", "edited", "u2"], toolsHash: "t2", prefix: noChange }));
    expect(verdicts.observed).toEqual({ kind: "avoidable", sections: ["history", "tools"] });
  });
});
