import type { ListCollapsesResponse } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { describe, expect, it } from "vitest";
import { collapseRow } from "../testing/fixtures";
import { type CollapseQuery, collapseSummary, collapsesToJson, formatCollapses, noSectionLabel } from "./collapses";
import { FIT } from "./table";

const query: CollapseQuery = { sinceMs: Date.UTC(2026, 9, 13, 13, 0, 0), windowLabel: "24h", sessionId: null };

// Seed 001 §1.1: 146 alerts in 28 hours, 110 [workspace-rules], 24 [system-prompt,skills,subagent], 12 [skills].
const seedWindow: ListCollapsesResponse = {
  collapses: [
    collapseRow("811"),
    collapseRow("756", {
      promptTokens: 447_652,
      cachedTokens: 9_216,
      extraCost: 0.859,
      calledAtMs: Date.UTC(2026, 9, 14, 9, 59, 22, 850),
    }),
  ],
  totals: [
    { section: "skills", collapses: 36, extraCost: 10.5 },
    { section: "workspace-rules", collapses: 110, extraCost: 95.92 },
    { section: "subagent", collapses: 24, extraCost: 6 },
    { section: "system-prompt", collapses: 24, extraCost: 7 },
  ],
  totalCollapses: 146,
  totalExtraCost: 112.42,
  causeTotals: [],
};

describe("formatCollapses", () => {
  const text = formatCollapses(seedWindow, query);
  const lines = text.split("\n");

  it("says which window it covers", () => {
    expect(lines[0]).toBe("Cache collapses since 2026-10-13T13:00:00.000Z (last 24h)");
    expect(formatCollapses(seedWindow, { sinceMs: 0, windowLabel: "all", sessionId: "811" }).split("\n")[0]).toBe(
      "Cache collapses (everything the monitor keeps) for session 811",
    );
  });

  it("lists each collapse with session, UTC time, cached share from the tokens, extra cost, sections and cause", () => {
    const row = lines.find((line) => line.startsWith("811 "));
    expect(row).toBeDefined();
    expect(row).toContain("2026-10-14T13:11:11.539Z");
    expect(row).toContain("1.9%");
    expect(row).toContain("99.8%");
    expect(row).toContain("+0.8720");
    expect(row).toContain("workspace-rules");
    expect(row?.endsWith("workspace-rules changed")).toBe(true);
    expect(lines.find((line) => line.startsWith("756 "))).toContain("2.1%");
  });

  it("aligns the columns under their headers", () => {
    const header = lines.find((line) => line.startsWith("SESSION")) as string;
    const rows = lines.filter((line) => /^(811|756) /.test(line));
    for (const column of ["TIME (UTC)", "CHANGED SECTIONS", "CAUSE"]) {
      const offset = header.indexOf(column);
      for (const row of rows) expect(row[offset - 1], `${column} in ${row}`).toBe(" ");
      for (const row of rows) expect(row[offset], `${column} in ${row}`).not.toBe(" ");
    }
  });

  it("totals per section, most collapses first, with the share of all collapses", () => {
    const start = lines.findIndex((line) => line.startsWith("SECTION"));
    const sectionRows = lines.slice(start + 1, start + 5).map((line) => line.split(/\s+/));
    expect(sectionRows).toEqual([
      ["workspace-rules", "110", "75%", "+95.9200"],
      ["skills", "36", "25%", "+10.5000"],
      ["system-prompt", "24", "16%", "+7.0000"],
      ["subagent", "24", "16%", "+6.0000"],
    ]);
  });

  it("ends with the grand total in the seed's words", () => {
    expect(lines.at(-2)).toBe(
      "Total: 146 collapses, extra cost +112.4200: 110 workspace-rules (75%), 36 skills (25%), 24 system-prompt (16%), 24 subagent (16%)",
    );
  });

  it("says when the list is cut by --limit", () => {
    expect(text).toContain("(showing 2 of 146; raise --limit to see more)");
  });

  it("flags a collapse the provider saw and we did not, and names it in the totals", () => {
    const response: ListCollapsesResponse = {
      collapses: [
        collapseRow("435", {
          changedSections: [],
          cause: "",
          attribution: "provider_only",
          providerCacheMissReason: "ttl_expired",
        }),
      ],
      totals: [{ section: "", collapses: 1, extraCost: 0.872 }],
      totalCollapses: 1,
      totalExtraCost: 0.872,
      causeTotals: [],
    };
    const out = formatCollapses(response, query);
    const row = out.split("\n").find((line) => line.startsWith("435 "));
    expect(row).toContain("(none)");
    expect(row).toContain("FLAG provider_only: outside us: TTL, routing, model switch; provider: ttl_expired");
    expect(out).toContain(`${noSectionLabel}  `);
    expect(collapseSummary(response)).toBe(`1 collapse, extra cost +0.8720: 1 ${noSectionLabel} (100%)`);
  });

  it("shows a history-only or tools-only change in the CHANGED column instead of (none)", () => {
    const response = {
      collapses: [
        collapseRow("history-only", { changedSections: [], historyRewritten: true, cause: "history rewritten" }),
        collapseRow("tools-only", { changedSections: [], toolsChanged: true, cause: "tool definitions changed" }),
      ],
      totals: [],
      totalCollapses: 2,
      totalExtraCost: 1.744,
      causeTotals: [],
    };
    const lines = formatCollapses(response, query).split("\n");
    expect(lines.find((line) => line.startsWith("history-only "))).toMatch(/\(history\)\s+history rewritten/);
    expect(lines.find((line) => line.startsWith("tools-only "))).toMatch(/\(tools\)\s+tool definitions changed/);
    expect(collapsesToJson(response, query).collapses[0]).toMatchObject({
      history_rewritten: true,
      tools_changed: false,
    });
  });

  it("says so when there is nothing in the window", () => {
    const out = formatCollapses(
      { collapses: [], totals: [], totalCollapses: 0, totalExtraCost: 0, causeTotals: [] },
      query,
    );
    expect(out).toContain("No cache collapses.");
    expect(out).not.toContain("SESSION");
  });
});

describe("cause codes", () => {
  const window: ListCollapsesResponse = {
    collapses: [
      collapseRow("811"),
      collapseRow("435", {
        changedSections: [],
        cause: "provider-side cache miss with our prefix unchanged",
        attribution: "provider_only",
        providerCacheMissReason: "system_changed",
        causeCode: "provider_only",
        causeDisagreement: "provider says system_changed; our fingerprints saw no change",
      }),
    ],
    totals: [],
    totalCollapses: 3,
    totalExtraCost: 2.6,
    causeTotals: [
      { causeCode: "provider_only", collapses: 1, extraCost: 0.9 },
      { causeCode: "section_changed:workspace-rules", collapses: 2, extraCost: 1.7 },
    ],
  };
  const text = formatCollapses(window, query);

  it("shows each collapse's code and spells out a disagreement in its cause", () => {
    expect(text.split("\n").find((l) => l.startsWith("811 "))).toMatch(
      /\+0\.8720\s+section_changed:workspace-rules\s+/,
    );
    const disagreeing = text.split("\n").find((l) => l.startsWith("435 ")) ?? "";
    expect(disagreeing).toMatch(/\s+provider_only\s+\(none\)/);
    expect(disagreeing).toContain(
      "provider: system_changed; DISAGREE: provider says system_changed; our fingerprints saw no change",
    );
  });

  it("totals per cause code, most collapses first", () => {
    const tail = text.slice(text.indexOf("Per cause"));
    expect(tail).toMatch(/section_changed:workspace-rules\s+2\s+67%\s+\+1\.7000\nprovider_only\s+1\s+33%/);
    const json = collapsesToJson(window, query);
    expect(json.cause_totals.map((t) => t.cause_code)).toEqual(["section_changed:workspace-rules", "provider_only"]);
    expect(json.collapses[1]).toMatchObject({
      cause_code: "provider_only",
      cause_disagreement: "provider says system_changed; our fingerprints saw no change",
    });
    expect(json.collapses[0]?.cause_disagreement).toBeNull();
  });
});

describe("collapsesToJson", () => {
  const json = collapsesToJson(seedWindow, query);

  it("has stable snake_case keys", () => {
    expect(Object.keys(json)).toEqual([
      "window",
      "collapses",
      "totals",
      "cause_totals",
      "total_collapses",
      "total_extra_cost",
    ]);
    expect(Object.keys(json.collapses[0] ?? {})).toEqual([
      "session_id",
      "request_id",
      "called_at_ms",
      "called_at",
      "model",
      "prompt_tokens",
      "cached_tokens",
      "cached_ratio",
      "baseline_ratio",
      "cost",
      "expected_cost",
      "extra_cost",
      "changed_sections",
      "history_rewritten",
      "tools_changed",
      "cause",
      "attribution",
      "disagreement",
      "provider_cache_miss_reason",
      "cause_code",
      "cause_disagreement",
      "source",
      "first_changed_block",
      "diverged_offset",
    ]);
  });

  it("carries the numbers unrounded and the shares as ratios", () => {
    expect(json.window).toEqual({ since_ms: query.sinceMs, since: "2026-10-13T13:00:00.000Z", session_id: null });
    expect(json.collapses[0]).toMatchObject({ session_id: "811", prompt_tokens: 453_569, extra_cost: 0.872 });
    expect(json.collapses[0]?.cached_ratio).toBeCloseTo(8_576 / 453_569, 10);
    expect(json.totals[0]).toEqual({ section: "workspace-rules", collapses: 110, share: 110 / 146, extra_cost: 95.92 });
    expect(json.total_collapses).toBe(146);
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
  });

  it("explains a disagreement and leaves agreement null", () => {
    expect(json.collapses[0]?.disagreement).toBeNull();
    const flagged = collapsesToJson(
      { ...seedWindow, collapses: [collapseRow("435", { attribution: "provider_only", changedSections: [] })] },
      query,
    );
    expect(flagged.collapses[0]?.disagreement).toContain("provider says cache missed");
  });
});

describe("a gateway session's collapses", () => {
  const gatewayWindow: ListCollapsesResponse = {
    collapses: [
      collapseRow("user_test_session_1", {
        changedSections: ["system[0]"],
        causeCode: "section_changed:system[0]",
        cause: "system block system[0] changed (system); the request diverged at byte 7,950 (byte 6,100 of the block)",
        source: "gateway",
        firstChangedBlock: { index: 1, kind: "system", role: "system" },
        divergedOffset: 7_950,
      }),
      collapseRow("gw-3f2a", {
        changedSections: [],
        toolsChanged: true,
        causeCode: "tools_changed",
        cause: "tool definitions changed (block 0)",
        source: "gateway",
        firstChangedBlock: { index: 0, kind: "tools", role: "tools" },
        divergedOffset: 412,
      }),
      collapseRow("811"),
    ],
    totals: [],
    totalCollapses: 3,
    totalExtraCost: 2.616,
    causeTotals: [],
  };

  it("shows each like any other, with the block that changed and the byte the request diverged at", () => {
    const lines = formatCollapses(gatewayWindow, query).split("\n");
    const date = lines.find((line) => line.startsWith("user_test_session_1 "));
    expect(date).toContain("section_changed:system[0]");
    expect(date).toContain("system[0] (block 1 system @ byte 7,950)");
    const tools = lines.find((line) => line.startsWith("gw-3f2a "));
    expect(tools).toContain("tools_changed");
    expect(tools).toContain("(tools) (block 0 tools @ byte 412)");
    // Our builds' rows are as they were.
    const ours = lines.find((line) => line.startsWith("811 "));
    expect(ours).toContain("workspace-rules");
    expect(ours).not.toContain("block");
  });

  it("cuts the cell in the 120-column layout, the cause line under the row still naming the block and byte", () => {
    const lines = formatCollapses(gatewayWindow, query, FIT).split("\n");
    const at = lines.findIndex((line) => line.startsWith("user_test_session_1"));
    expect(lines.every((line) => [...line].length <= 120)).toBe(true);
    expect(lines.slice(at + 1, at + 3).join(" ")).toContain("the request diverged at byte 7,950");
  });

  it("carries source, first_changed_block and diverged_offset in --json (null, and prompt-assembly, for our builds)", () => {
    const json = collapsesToJson(gatewayWindow, query);
    expect(json.collapses[0]).toMatchObject({
      source: "gateway",
      first_changed_block: { index: 1, kind: "system", role: "system" },
      diverged_offset: 7_950,
      cause_code: "section_changed:system[0]",
    });
    expect(json.collapses[1]).toMatchObject({
      source: "gateway",
      first_changed_block: { kind: "tools" },
      diverged_offset: 412,
    });
    expect(json.collapses[2]).toMatchObject({
      source: "prompt-assembly",
      first_changed_block: null,
      diverged_offset: null,
    });
  });
});
