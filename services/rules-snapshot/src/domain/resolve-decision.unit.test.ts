import { describe, expect, it } from "vitest";
import type { RawRules, SnapshotRow } from "./model";
import { decideResolution, type ResolutionInput } from "./resolve-decision";

const WORKSPACE = "/srv/ws/oc_4fc3";
const EMPTY_HASH = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

function raw(sectionText: string, hash: string): RawRules {
  return { sectionText, sourcePath: `${WORKSPACE}/AGENTS.md`, sourceMtimeMs: 1_760_000_000_123, rawHash: hash };
}
const EMPTY_RAW: RawRules = {
  sectionText: "",
  sourcePath: `${WORKSPACE}/AGENTS.md`,
  sourceMtimeMs: null,
  rawHash: EMPTY_HASH,
};

function row(overrides: Partial<SnapshotRow> = {}): SnapshotRow {
  return {
    sessionId: "811",
    workspace: WORKSPACE,
    rulesText: "## 工作区规则\n\npinned rules",
    rulesHash: "cd34pinnedhash000",
    sourcePath: `${WORKSPACE}/AGENTS.md`,
    sourceMtimeMs: 1_759_000_000_000,
    generation: 2,
    lastReportedDiskHash: null,
    createdAtMs: 1,
    updatedAtMs: 1,
    ...overrides,
  };
}

function input(overrides: Partial<ResolutionInput>): ResolutionInput {
  return {
    sessionId: "811",
    existing: null,
    workspace: WORKSPACE,
    raw: raw("## 工作区规则\n\nfresh rules", "ab12freshhash000"),
    callerGeneration: 2,
    embed: false,
    cacheCold: false,
    ...overrides,
  };
}

describe("decideResolution", () => {
  it("skips embedded page agents without touching the store", () => {
    const plan = decideResolution(input({ embed: true, existing: row() }));
    expect(plan).toMatchObject({ decision: "SKIPPED_EMBED", sectionText: "", action: { kind: "none" }, event: null });
    expect(plan.logLines).toEqual([]);
  });

  it("pins a first non-empty read with the caller's generation", () => {
    const plan = decideResolution(input({ callerGeneration: 0 }));
    expect(plan.decision).toBe("PINNED");
    expect(plan.sectionText).toBe("## 工作区规则\n\nfresh rules");
    expect(plan.rulesHash).toBe("ab12freshhash000");
    expect(plan.action).toEqual({
      kind: "insert",
      snapshot: {
        sessionId: "811",
        workspace: WORKSPACE,
        rulesText: "## 工作区规则\n\nfresh rules",
        rulesHash: "ab12freshhash000",
        sourcePath: `${WORKSPACE}/AGENTS.md`,
        sourceMtimeMs: 1_760_000_000_123,
        generation: 0,
      },
    });
    expect(plan.logLines).toEqual([
      `workspace rules snapshot pinned session=811 chars=${"## 工作区规则\n\nfresh rules".length} source=${WORKSPACE}/AGENTS.md mtime=1760000000123`,
    ]);
    expect(plan.event).toEqual({
      $case: "pinned",
      value: {
        workspace: WORKSPACE,
        rulesHash: "ab12freshhash000",
        chars: "## 工作区规则\n\nfresh rules".length,
        sourcePath: `${WORKSPACE}/AGENTS.md`,
        sourceMtimeMs: 1_760_000_000_123,
        generation: 0,
        reason: "first",
      },
    });
  });

  it("pins a session without a row under the caller's later generation", () => {
    const plan = decideResolution(input({ callerGeneration: 3 }));
    expect(plan.pinnedGeneration).toBe(3);
    expect(plan.event).toMatchObject({ $case: "pinned", value: { reason: "first", generation: 3 } });
  });

  it("logs reported content without a path or mtime", () => {
    const plan = decideResolution(
      input({ raw: { sectionText: "## 工作区规则\n\nx", sourcePath: null, sourceMtimeMs: null, rawHash: "h" } }),
    );
    expect(plan.logLines).toEqual([
      "workspace rules snapshot pinned session=811 chars=11 source=reported-content mtime=none",
    ]);
    expect(plan.event).toMatchObject({ value: { sourcePath: "", sourceMtimeMs: 0 } });
  });

  it("does not pin an empty first read", () => {
    const plan = decideResolution(input({ raw: EMPTY_RAW }));
    expect(plan).toMatchObject({
      decision: "EMPTY_NOT_PINNED",
      sectionText: "",
      rulesHash: "",
      pinnedGeneration: 0,
      action: { kind: "none" },
      event: null,
    });
    expect(plan.logLines).toEqual([]);
  });

  it("retains the snapshot when the disk says the same", () => {
    const pinned = row();
    const plan = decideResolution(input({ existing: pinned, raw: raw(pinned.rulesText, pinned.rulesHash) }));
    expect(plan).toMatchObject({
      decision: "RETAINED",
      sectionText: pinned.rulesText,
      rulesHash: pinned.rulesHash,
      pinnedGeneration: 2,
      action: { kind: "none" },
      event: null,
    });
  });

  it("retains a snapshot pinned under a newer generation than the caller knows", () => {
    const pinned = row({ generation: 5 });
    const plan = decideResolution(
      input({ existing: pinned, raw: raw(pinned.rulesText, pinned.rulesHash), callerGeneration: 4 }),
    );
    expect(plan.decision).toBe("RETAINED");
    expect(plan.pinnedGeneration).toBe(5);
  });

  it("retains the snapshot over changed rules and reports the new disk hash once", () => {
    const pinned = row();
    const plan = decideResolution(input({ existing: pinned }));
    expect(plan.decision).toBe("RETAINED_DISK_CHANGED");
    expect(plan.sectionText).toBe(pinned.rulesText);
    expect(plan.rulesHash).toBe(pinned.rulesHash);
    expect(plan.action).toEqual({
      kind: "markReported",
      diskHash: "ab12freshhash000",
      pinnedHash: "cd34pinnedhash000",
    });
    expect(plan.logLines).toEqual([
      "workspace rules changed on disk but snapshot retained session=811 disk_hash=ab12freshhas pinned_hash=cd34pinnedha effective=on-next-snapshot",
    ]);
    expect(plan.event).toEqual({
      $case: "retainedChanged",
      value: { diskHash: "ab12freshhash000", pinnedHash: "cd34pinnedhash000" },
    });

    const again = decideResolution(input({ existing: row({ lastReportedDiskHash: "ab12freshhash000" }) }));
    expect(again).toMatchObject({
      decision: "RETAINED_DISK_CHANGED",
      sectionText: pinned.rulesText,
      action: { kind: "none" },
      event: null,
    });
    expect(again.logLines).toEqual([]);

    const changedAgain = decideResolution(
      input({
        existing: row({ lastReportedDiskHash: "ab12freshhash000" }),
        raw: raw("## 工作区规则\n\nv3", "ef56third"),
      }),
    );
    expect(changedAgain.action).toEqual({
      kind: "markReported",
      diskHash: "ef56third",
      pinnedHash: "cd34pinnedhash000",
    });
  });

  it("keeps the section when a pinned session reads empty, reporting it once", () => {
    const pinned = row();
    const plan = decideResolution(input({ existing: pinned, raw: EMPTY_RAW }));
    expect(plan.decision).toBe("RETAINED_DISK_EMPTY");
    expect(plan.sectionText).toBe(pinned.rulesText);
    expect(plan.action).toEqual({ kind: "markReported", diskHash: EMPTY_HASH, pinnedHash: pinned.rulesHash });
    expect(plan.logLines).toEqual([
      "workspace rules empty on disk but snapshot retained session=811 effective=on-next-snapshot",
    ]);
    expect(plan.event).toEqual({ $case: "retainedEmpty", value: { pinnedHash: pinned.rulesHash } });

    const again = decideResolution(input({ existing: row({ lastReportedDiskHash: EMPTY_HASH }), raw: EMPTY_RAW }));
    expect(again).toMatchObject({
      decision: "RETAINED_DISK_EMPTY",
      sectionText: pinned.rulesText,
      action: { kind: "none" },
      event: null,
    });
  });

  it("overwrites a row pinned for another workspace with what is read now", () => {
    const plan = decideResolution(input({ existing: row({ workspace: "/srv/ws/other" }) }));
    expect(plan.decision).toBe("REPINNED_WORKSPACE_MISMATCH");
    expect(plan.sectionText).toBe("## 工作区规则\n\nfresh rules");
    expect(plan.action).toMatchObject({
      kind: "overwrite",
      snapshot: { workspace: WORKSPACE, rulesText: "## 工作区规则\n\nfresh rules", generation: 2 },
    });
    expect(plan.event).toMatchObject({ $case: "pinned", value: { reason: "workspace_mismatch" } });
    expect(plan.logLines).toHaveLength(1);
    expect(plan.logLines[0]).toMatch(/^workspace rules snapshot pinned session=811 /);
  });

  it("overwrites a row whose text is empty", () => {
    const plan = decideResolution(input({ existing: row({ rulesText: "  " }) }));
    expect(plan.decision).toBe("PINNED");
    expect(plan.action.kind).toBe("overwrite");
    expect(plan.event).toMatchObject({ value: { reason: "invalid_row" } });
  });

  it("deletes an invalid row when the read is empty", () => {
    const mismatch = decideResolution(input({ existing: row({ workspace: "/srv/ws/other" }), raw: EMPTY_RAW }));
    expect(mismatch).toMatchObject({
      decision: "EMPTY_NOT_PINNED",
      sectionText: "",
      action: { kind: "delete", belowGeneration: null },
    });
    expect(mismatch.logLines).toEqual(["workspace rules snapshot invalidated session=811 reason=workspace-mismatch"]);
    expect(mismatch.event).toEqual({ $case: "invalidated", value: { reason: "workspace-mismatch", generation: 2 } });

    const blank = decideResolution(input({ existing: row({ rulesText: "" }), raw: EMPTY_RAW }));
    expect(blank).toMatchObject({ decision: "EMPTY_NOT_PINNED", action: { kind: "delete", belowGeneration: null } });
    expect(blank.event).toMatchObject({ value: { reason: "invalid-row" } });
  });

  it("re-pins a snapshot from an older compaction generation even if the disk did not change", () => {
    const pinned = row({ generation: 1 });
    const plan = decideResolution(
      input({ existing: pinned, raw: raw("## 工作区规则\n\nfresh rules", "ab12freshhash000"), callerGeneration: 2 }),
    );
    expect(plan.decision).toBe("REPINNED_STALE_GENERATION");
    expect(plan.sectionText).toBe("## 工作区规则\n\nfresh rules");
    expect(plan.pinnedGeneration).toBe(2);
    expect(plan.action).toMatchObject({
      kind: "overwrite",
      snapshot: { generation: 2, rulesHash: "ab12freshhash000" },
    });
    expect(plan.event).toMatchObject({ $case: "pinned", value: { reason: "stale_generation", generation: 2 } });
    expect(plan.logLines[0]).toBe("workspace rules snapshot invalidated session=811 reason=stale-generation");
    expect(plan.logLines[1]).toMatch(/^workspace rules snapshot pinned session=811 /);

    const unchanged = decideResolution(
      input({ existing: pinned, raw: raw(pinned.rulesText, pinned.rulesHash), callerGeneration: 2 }),
    );
    expect(unchanged.decision).toBe("REPINNED_STALE_GENERATION");
    expect(unchanged.action.kind).toBe("overwrite");
  });

  it("drops a stale snapshot without pinning when the read is empty", () => {
    const plan = decideResolution(input({ existing: row({ generation: 0 }), raw: EMPTY_RAW, callerGeneration: 1 }));
    expect(plan).toMatchObject({
      decision: "EMPTY_NOT_PINNED",
      sectionText: "",
      action: { kind: "delete", belowGeneration: 1 },
    });
    expect(plan.event).toEqual({ $case: "invalidated", value: { reason: "stale-generation", generation: 1 } });
  });

  describe("on a cold cache (ResolveRequest.cache_cold, REPIN_WHEN_COLD)", () => {
    const changedRow = () => row({ generation: 3, lastReportedDiskHash: "ab12freshhash000" });

    it("re-pins a snapshot the disk moved away from, keeping the row's generation", () => {
      const plan = decideResolution(input({ existing: changedRow(), cacheCold: true }));
      expect(plan).toMatchObject({
        decision: "REPINNED_COLD_CACHE",
        sectionText: "## 工作区规则\n\nfresh rules",
        rulesHash: "ab12freshhash000",
        pinnedGeneration: 3,
        refreshReason: "",
      });
      expect(plan.action).toEqual({
        kind: "overwrite",
        snapshot: {
          sessionId: "811",
          workspace: WORKSPACE,
          rulesText: "## 工作区规则\n\nfresh rules",
          rulesHash: "ab12freshhash000",
          sourcePath: `${WORKSPACE}/AGENTS.md`,
          sourceMtimeMs: 1_760_000_000_123,
          generation: 3,
        },
      });
      expect(plan.event).toMatchObject({ $case: "pinned", value: { reason: "cold_cache", generation: 3 } });
      expect(plan.logLines[0]).toBe("workspace rules snapshot invalidated session=811 reason=cold-cache");
      expect(plan.logLines[1]).toMatch(/^workspace rules snapshot pinned session=811 /);
    });

    it("keeps holding the change back while the cache may be warm", () => {
      const plan = decideResolution(input({ existing: changedRow(), cacheCold: false }));
      expect(plan).toMatchObject({ decision: "RETAINED_DISK_CHANGED", action: { kind: "none" } });
      expect(plan.sectionText).toBe(changedRow().rulesText);
    });

    it("changes nothing else: an unchanged disk is retained, an empty read keeps the section", () => {
      const pinned = row();
      const same = decideResolution(
        input({ existing: pinned, raw: raw(pinned.rulesText, pinned.rulesHash), cacheCold: true }),
      );
      expect(same).toMatchObject({ decision: "RETAINED", action: { kind: "none" } });
      const empty = decideResolution(input({ existing: pinned, raw: EMPTY_RAW, cacheCold: true }));
      expect(empty).toMatchObject({ decision: "RETAINED_DISK_EMPTY", sectionText: pinned.rulesText });
      const stale = decideResolution(input({ existing: row({ generation: 1 }), callerGeneration: 2, cacheCold: true }));
      expect(stale.decision).toBe("REPINNED_STALE_GENERATION");
      const first = decideResolution(input({ cacheCold: true }));
      expect(first.decision).toBe("PINNED");
    });
  });

  it("checks the workspace before the generation", () => {
    const plan = decideResolution(
      input({ existing: row({ workspace: "/elsewhere", generation: 0 }), callerGeneration: 3 }),
    );
    expect(plan.decision).toBe("REPINNED_WORKSPACE_MISMATCH");
  });
});
