import type { CacheCollapsed } from "@prefix-guard/proto/events/v1/collapse_events";
import type { ListCollapsesResponse } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { disagreementOf, explanationText } from "./attribution";
import { changedBlockJson, withChangedBlock } from "./changed-block";
import { cachedShare, formatExtraCost, formatShare, formatUtc, formatUtcSeconds, percentOf } from "./numbers";
import { type Layout, renderTable, WIDE, wrapText } from "./table";

export interface CollapseQuery {
  /** Window start sent to the monitor (UTC ms); 0 = everything kept. */
  readonly sinceMs: number;
  /** The window as the operator spelled it ("24h"); only shown when sinceMs > 0. */
  readonly windowLabel: string;
  readonly sessionId: string | null;
}

/** A collapse with no changed section is grouped under this name in the totals. */
export const noSectionLabel = "(none: outside us)";

const emptyCollapse: CacheCollapsed = {
  requestId: "",
  model: "",
  promptTokens: 0,
  cachedTokens: 0,
  cachedRatio: 0,
  baselineRatio: 0,
  changedSections: [],
  cause: "",
  cost: 0,
  expectedCost: 0,
  extraCost: 0,
  attribution: "",
  providerCacheMissReason: "",
  calledAtMs: 0,
  historyRewritten: false,
  toolsChanged: false,
  causeCode: "",
  causeDisagreement: "",
};

/**
 * What the CHANGED column shows: the sections, else the history or tools our fingerprints saw move;
 * for a request through the gateway, then its first changed block and the byte it diverged at.
 */
function changedCell(collapse: CacheCollapsed): string {
  const parts = [...collapse.changedSections];
  if (parts.length === 0 && collapse.toolsChanged) parts.push("(tools)");
  if (parts.length === 0 && collapse.historyRewritten) parts.push("(history)");
  return withChangedBlock(parts.length > 0 ? parts.join(",") : "(none)", collapse);
}

function cachedRatioOf(collapse: CacheCollapsed): number {
  return cachedShare(collapse.promptTokens, collapse.cachedTokens) ?? collapse.cachedRatio;
}

function sortedTotals(response: ListCollapsesResponse) {
  return [...response.totals].sort(
    (a, b) => b.collapses - a.collapses || b.extraCost - a.extraCost || a.section.localeCompare(b.section),
  );
}

function sortedCauseTotals(response: ListCollapsesResponse) {
  return [...response.causeTotals].sort(
    (a, b) => b.collapses - a.collapses || b.extraCost - a.extraCost || a.causeCode.localeCompare(b.causeCode),
  );
}

function causeCell(collapse: CacheCollapsed): string {
  const text = explanationText(collapse.cause, collapse.attribution, collapse.providerCacheMissReason);
  if (collapse.causeDisagreement === "") return text;
  return `${text === "-" ? "" : `${text}; `}DISAGREE: ${collapse.causeDisagreement}`;
}

function heading(query: CollapseQuery): string {
  const window =
    query.sinceMs > 0
      ? `since ${formatUtc(query.sinceMs)} (last ${query.windowLabel})`
      : "(everything the monitor keeps)";
  return `Cache collapses ${window}${query.sessionId !== null ? ` for session ${query.sessionId}` : ""}`;
}

/** "146 collapses, extra cost +127.3400: 110 workspace-rules (75%), 24 skills (16%)", as in seed 001 §1.1. */
export function collapseSummary(response: ListCollapsesResponse): string {
  const total = response.totalCollapses;
  const bySection = sortedTotals(response)
    .map((t) => `${t.collapses} ${t.section || noSectionLabel} (${percentOf(t.collapses, total)})`)
    .join(", ");
  const head = `${total} collapse${total === 1 ? "" : "s"}, extra cost ${formatExtraCost(response.totalExtraCost)}`;
  return bySection ? `${head}: ${bySection}` : head;
}

export function formatCollapses(response: ListCollapsesResponse, query: CollapseQuery, layout: Layout = WIDE): string {
  const lines = [heading(query)];
  if (response.collapses.length === 0 && response.totalCollapses === 0) {
    lines.push("", "No cache collapses.");
    return `${lines.join("\n")}\n`;
  }
  const rows = response.collapses.map((row) => {
    const collapse = row.collapse ?? emptyCollapse;
    return [
      row.sessionId,
      layout.wide ? formatUtc(collapse.calledAtMs) : formatUtcSeconds(collapse.calledAtMs),
      formatShare(cachedRatioOf(collapse)),
      formatShare(collapse.baselineRatio),
      formatExtraCost(collapse.extraCost),
      collapse.causeCode || "-",
      changedCell(collapse),
      causeCell(collapse),
    ];
  });
  const table = renderTable(
    [
      { header: "SESSION", fit: 30 },
      { header: "TIME (UTC)" },
      { header: "CACHED", align: "right" },
      { header: "NORMAL", align: "right" },
      { header: "EXTRA COST", align: "right" },
      { header: "CODE", fit: 40 },
      { header: "CHANGED SECTIONS", fit: 30 },
      // Unless --wide, the cause goes on its own wrapped line under its row.
      { header: "CAUSE", fit: "hidden" },
    ],
    rows,
    layout,
  );
  lines.push("", table[0] as string);
  rows.forEach((row, i) => {
    lines.push(table[i + 1] as string);
    if (!layout.wide) lines.push(...wrapText(`    cause: ${row[7] ?? "-"}`, layout, "      "));
  });
  if (response.collapses.length < response.totalCollapses)
    lines.push(`(showing ${response.collapses.length} of ${response.totalCollapses}; raise --limit to see more)`);

  const totals = sortedTotals(response);
  if (totals.length > 0) {
    lines.push(
      "",
      "Per section (a collapse that changed several sections counts once for each):",
      ...renderTable(
        [
          { header: "SECTION" },
          { header: "COLLAPSES", align: "right" },
          { header: "SHARE", align: "right" },
          { header: "EXTRA COST", align: "right" },
        ],
        totals.map((t) => [
          t.section || noSectionLabel,
          String(t.collapses),
          percentOf(t.collapses, response.totalCollapses),
          formatExtraCost(t.extraCost),
        ]),
        layout,
      ),
    );
  }
  const causes = sortedCauseTotals(response);
  if (causes.length > 0) {
    lines.push(
      "",
      "Per cause (each collapse once; README: Cause taxonomy):",
      ...renderTable(
        [
          { header: "CODE" },
          { header: "COLLAPSES", align: "right" },
          { header: "SHARE", align: "right" },
          { header: "EXTRA COST", align: "right" },
        ],
        causes.map((t) => [
          t.causeCode,
          String(t.collapses),
          percentOf(t.collapses, response.totalCollapses),
          formatExtraCost(t.extraCost),
        ]),
        layout,
      ),
    );
  }
  lines.push("", ...wrapText(`Total: ${collapseSummary(response)}`, layout, "  "));
  return `${lines.join("\n")}\n`;
}

/** Stable snake_case keys, named after the proto fields, plus a few derived ones (times, shares, flags). */
export function collapsesToJson(response: ListCollapsesResponse, query: CollapseQuery) {
  return {
    window: {
      since_ms: query.sinceMs,
      since: query.sinceMs > 0 ? formatUtc(query.sinceMs) : null,
      session_id: query.sessionId,
    },
    collapses: response.collapses.map((row) => {
      const c = row.collapse ?? emptyCollapse;
      return {
        session_id: row.sessionId,
        request_id: c.requestId,
        called_at_ms: c.calledAtMs,
        called_at: c.calledAtMs > 0 ? formatUtc(c.calledAtMs) : null,
        model: c.model,
        prompt_tokens: c.promptTokens,
        cached_tokens: c.cachedTokens,
        cached_ratio: cachedRatioOf(c),
        baseline_ratio: c.baselineRatio,
        cost: c.cost,
        expected_cost: c.expectedCost,
        extra_cost: c.extraCost,
        changed_sections: c.changedSections,
        history_rewritten: c.historyRewritten,
        tools_changed: c.toolsChanged,
        cause: c.cause,
        attribution: c.attribution,
        disagreement: disagreementOf(c.attribution)?.long ?? null,
        provider_cache_miss_reason: c.providerCacheMissReason,
        cause_code: c.causeCode,
        cause_disagreement: c.causeDisagreement || null,
        ...changedBlockJson(c),
      };
    }),
    totals: sortedTotals(response).map((t) => ({
      section: t.section,
      collapses: t.collapses,
      share: response.totalCollapses > 0 ? t.collapses / response.totalCollapses : 0,
      extra_cost: t.extraCost,
    })),
    cause_totals: sortedCauseTotals(response).map((t) => ({
      cause_code: t.causeCode,
      collapses: t.collapses,
      share: response.totalCollapses > 0 ? t.collapses / response.totalCollapses : 0,
      extra_cost: t.extraCost,
    })),
    total_collapses: response.totalCollapses,
    total_extra_cost: response.totalExtraCost,
  };
}
