import { describe, expect, it } from "vitest";
import { snapshot } from "../testing/fixtures";
import { formatReplay, replayToJson } from "./replay";
import { charCount, formatRefresh, formatSnapshot, refreshToJson, snapshotToJson } from "./snapshot";

describe("formatSnapshot", () => {
  it("shows workspace, hash, generation, source, chars and pinned time", () => {
    const text = formatSnapshot({ found: true, snapshot: snapshot() }, "811");
    expect(text.split("\n")).toEqual([
      "Rules snapshot of session 811",
      "  workspace   /workspaces/oc_4fc3cb715272aae592213f167743846d",
      `  hash        ${"cd34".repeat(16)}`,
      "  generation  3",
      "  source      /workspaces/oc_4fc3cb715272aae592213f167743846d/AGENTS.md (mtime 2026-10-13T16:14:57.000Z)",
      "  chars       28",
      "  pinned at   2026-10-13T14:14:38.000Z",
      "  updated at  2026-10-13T14:14:38.000Z",
      "",
    ]);
  });

  it("says the content came from the client when there is no source file", () => {
    expect(formatSnapshot({ found: true, snapshot: snapshot({ sourcePath: "" }) }, "811")).toContain(
      "source      content reported by the client (no file)",
    );
  });

  it("points out that AGENTS.md changed on disk after pinning", () => {
    const text = formatSnapshot(
      { found: true, snapshot: snapshot({ lastReportedDiskHash: "ab12".repeat(16) }) },
      "811",
    );
    expect(text).toContain(`disk hash   ${"ab12".repeat(16)} (AGENTS.md changed since pinning`);
    const same = formatSnapshot(
      { found: true, snapshot: snapshot({ lastReportedDiskHash: "cd34".repeat(16) }) },
      "811",
    );
    expect(same).not.toContain("disk hash");
  });

  it("says 'no snapshot' when the session has none", () => {
    expect(formatSnapshot({ found: false }, "811")).toMatch(/^No rules snapshot for session 811/);
    expect(snapshotToJson({ found: false }, "811")).toEqual({ session_id: "811", found: false, snapshot: null });
  });

  it("JSON carries the text, the hash and the times", () => {
    const json = snapshotToJson({ found: true, snapshot: snapshot() }, "811");
    expect(json.found).toBe(true);
    expect(json.snapshot).toMatchObject({
      workspace: "/workspaces/oc_4fc3cb715272aae592213f167743846d",
      rules_hash: "cd34".repeat(16),
      generation: 3,
      chars: 28,
      rules_text: snapshot().rulesText,
      pinned_at: "2026-10-13T14:14:38.000Z",
    });
  });

  it("counts characters, not UTF-16 units", () => {
    expect(charCount("工作区规则")).toBe(5);
    expect(charCount("😀")).toBe(1);
  });
});

describe("formatRefresh", () => {
  it("says whether a row was removed and that the next build re-pins", () => {
    const removed = formatRefresh({ removed: true }, "811", "agents-md-fixed");
    expect(removed).toContain("Removed the rules snapshot of session 811 (reason: agents-md-fixed)");
    expect(removed).toContain("next build re-pins");
    expect(formatRefresh({ removed: false }, "811", "x")).toContain("had no rules snapshot; nothing removed");
    expect(refreshToJson({ removed: true }, "811", "x")).toEqual({ session_id: "811", reason: "x", removed: true });
  });
});

describe("formatReplay", () => {
  it("prints the projection seq and the events applied", () => {
    expect(formatReplay({ projectionSeq: 621, eventsApplied: 621 }, "756")).toBe(
      "Rebuilt the prompt-assembly projection of session 756 from session-events: 621 events applied, projection seq 621.\n",
    );
    expect(formatReplay({ projectionSeq: 1, eventsApplied: 1 }, "756")).toContain("1 event applied");
    expect(replayToJson({ projectionSeq: 9, eventsApplied: 4 }, "756")).toEqual({
      session_id: "756",
      projection_seq: 9,
      events_applied: 4,
    });
  });
});
