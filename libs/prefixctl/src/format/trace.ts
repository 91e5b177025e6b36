import type { BuildTrace, TraceSessionResponse } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { disagreementOf, explanationText } from "./attribution";
import { changedBlockJson, sourceOf, withChangedBlock } from "./changed-block";
import { cachedShare, formatCost, formatCount, formatShare, formatUtc, formatUtcSeconds } from "./numbers";
import { type Column, type Layout, renderTable, WIDE, wrapText } from "./table";

export interface TraceQuery {
  readonly sessionId: string;
  readonly limit: number;
}

const requestIdChars = 12;

export function shortRequestId(requestId: string): string {
  return requestId.length > requestIdChars ? requestId.slice(0, requestIdChars) : requestId || "-";
}

function buildKind(build: BuildTrace): "first" | "changed" | "same" {
  if (build.firstBuild) return "first";
  return build.prefixChanged ? "changed" : "same";
}

function usageOf(build: BuildTrace) {
  return build.hasUsage ? build.usage : undefined;
}

function causeCell(build: BuildTrace): string {
  const reason = usageOf(build)?.providerReport?.cacheMissReason ?? "";
  // A collapse reads exactly as `prefixctl collapses` prints it (the server sends the collapse's cause).
  if (build.collapsed)
    return explanationText(build.cause, build.attribution === "agree" ? "none" : build.attribution, reason);
  const parts = [build.cause, reason ? `provider: ${reason}` : ""].filter((part) => part !== "");
  return parts.length > 0 ? parts.join("; ") : "-";
}

const dash = (text: string) => (text === "" ? "-" : text);

/** The changed sections, then (through the gateway) the first changed block and the byte it diverged at. */
function changedCell(build: BuildTrace): string {
  const sections = build.changedSections.length > 0 ? build.changedSections.join(",") : "-";
  if (!build.prefixChanged && !build.collapsed) return sections;
  return withChangedBlock(sections, build);
}

function row(build: BuildTrace, index: number, layout: Layout): string[] {
  const usage = usageOf(build);
  const share = usage ? cachedShare(usage.promptTokens, usage.cachedTokens) : undefined;
  const flag = disagreementOf(build.attribution);
  return [
    String(index + 1),
    layout.wide ? formatUtc(build.builtAtMs) : formatUtcSeconds(build.builtAtMs),
    shortRequestId(build.requestId),
    buildKind(build),
    changedCell(build),
    build.toolsChangeKind === "none" ? "-" : dash(build.toolsChangeKind),
    build.historyRewritten ? "rewritten" : "-",
    dash(build.rulesDecision),
    dash(build.anchorDate),
    build.dateNotices.length > 0 ? build.dateNotices.join(",") : "-",
    usage ? formatCount(usage.promptTokens) : "-",
    usage ? formatCount(usage.cachedTokens) : "-",
    usage ? formatCount(usage.completionTokens) : "-",
    share !== undefined ? formatShare(share) : "-",
    usage ? formatCost(build.cost) : "-",
    build.collapsed ? "COLLAPSE" : "-",
    dash(build.causeCode),
    flag ? `FLAG ${flag.attribution}` : dash(build.attribution),
    causeCell(build),
  ];
}

function summary(builds: readonly BuildTrace[]): string {
  const count = (predicate: (b: BuildTrace) => boolean) => builds.filter(predicate).length;
  const flagged = new Map<string, number>();
  for (const build of builds) {
    if (disagreementOf(build.attribution)) flagged.set(build.attribution, (flagged.get(build.attribution) ?? 0) + 1);
  }
  const disagreements = [...flagged.values()].reduce((a, b) => a + b, 0);
  const reported = builds.filter((b) => b.hasUsage && b.usage);
  const prompt = reported.reduce((sum, b) => sum + (b.usage?.promptTokens ?? 0), 0);
  const cached = reported.reduce((sum, b) => sum + (b.usage?.cachedTokens ?? 0), 0);
  const cost = reported.reduce((sum, b) => sum + b.cost, 0);
  const parts = [
    `${builds.length} build${builds.length === 1 ? "" : "s"}`,
    `${count((b) => !b.firstBuild && b.prefixChanged)} changed the prefix`,
    `${count((b) => b.collapsed)} collapsed`,
    `${disagreements} disagreement${disagreements === 1 ? "" : "s"}${
      disagreements > 0
        ? ` (${[...flagged.entries()]
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([name, n]) => `${name} ${n}`)
            .join(", ")})`
        : ""
    }`,
  ];
  const usageText =
    reported.length > 0
      ? `; ${reported.length} with usage: cost ${formatCost(cost)}, cached ${formatShare(prompt > 0 ? cached / prompt : 0)} of ${formatCount(prompt)} prompt tokens`
      : "; no usage reported yet";
  return `${parts.join(", ")}${usageText}`;
}

// Unless --wide: the columns that fit 120 characters, and the cause on its own wrapped line under
// its row (it is free text, often longer than a line).
const TRACE_COLUMNS: readonly Column[] = [
  { header: "#", align: "right" },
  { header: "TIME (UTC)" },
  { header: "REQUEST", fit: "hidden" },
  { header: "BUILD" },
  { header: "CHANGED SECTIONS", fit: 18 },
  { header: "TOOLS", fit: "hidden" },
  { header: "HISTORY", fit: "hidden" },
  { header: "RULES", fit: 14 },
  { header: "ANCHOR", fit: "hidden" },
  { header: "DATE NOTICES", fit: "hidden" },
  { header: "PROMPT", align: "right", fit: "hidden" },
  { header: "CACHED", align: "right", fit: "hidden" },
  { header: "COMPL", align: "right", fit: "hidden" },
  { header: "CACHED%", align: "right" },
  { header: "COST", align: "right" },
  { header: "COLLAPSE" },
  { header: "CODE", fit: 40 },
  { header: "ATTRIBUTION", fit: 18 },
  { header: "CAUSE", fit: "hidden" },
];

export function formatTrace(response: TraceSessionResponse, query: TraceQuery, layout: Layout = WIDE): string {
  const builds = response.builds;
  if (builds.length === 0) return `No builds recorded for session ${query.sessionId}.\n`;
  // A session is seen by one part of prefix-guard: our builds, or the gateway forwarding a harness's own.
  const gateway = builds.some((build) => sourceOf(build) === "gateway");
  const lines = [`Trace of session ${query.sessionId}${gateway ? " (requests through the gateway)" : ""}`, ""];
  const table = renderTable(
    TRACE_COLUMNS,
    builds.map((build, i) => row(build, i, layout)),
    layout,
  );
  lines.push(table[0] as string);
  builds.forEach((build, i) => {
    lines.push(table[i + 1] as string);
    if (!layout.wide) lines.push(...wrapText(`    cause: ${causeCell(build)}`, layout, "      "));
    // Under its row, so the disagreement is read together with the build it is about.
    const flag = disagreementOf(build.attribution);
    if (flag) lines.push(...wrapText(`    FLAG ${flag.attribution}: ${flag.long}`, layout, "      "));
    if (build.causeDisagreement)
      lines.push(...wrapText(`    DISAGREE ${build.causeCode}: ${build.causeDisagreement}`, layout, "      "));
  });
  if (builds.length >= query.limit) lines.push(`(limit of ${query.limit} builds reached; raise --limit to see more)`);
  lines.push("", ...wrapText(summary(builds), layout, "  "));
  return `${lines.join("\n")}\n`;
}

export function traceToJson(response: TraceSessionResponse, query: TraceQuery) {
  return {
    session_id: query.sessionId,
    builds: response.builds.map((b) => {
      const usage = usageOf(b);
      return {
        request_id: b.requestId,
        built_at_ms: b.builtAtMs,
        built_at: b.builtAtMs > 0 ? formatUtc(b.builtAtMs) : null,
        first_build: b.firstBuild,
        prefix_changed: b.prefixChanged,
        changed_sections: b.changedSections,
        section_hashes: b.sectionHashes,
        tools_hash: b.toolsHash,
        tools_change_kind: b.toolsChangeKind,
        history_rewritten: b.historyRewritten,
        cause: b.cause,
        rules_decision: b.rulesDecision,
        date_notices: b.dateNotices,
        anchor_date: b.anchorDate,
        estimated_tokens: b.estimatedTokens,
        usage: usage
          ? {
              model: usage.model,
              provider: usage.provider,
              prompt_tokens: usage.promptTokens,
              cached_tokens: usage.cachedTokens,
              completion_tokens: usage.completionTokens,
              cache_creation_tokens: usage.cacheCreationTokens,
              cached_ratio: cachedShare(usage.promptTokens, usage.cachedTokens) ?? null,
              reported_cost: usage.reportedCost ?? null,
              provider_cache_miss_reason: usage.providerReport?.cacheMissReason ?? "",
              called_at_ms: usage.calledAtMs,
            }
          : null,
        cost: b.cost,
        collapsed: b.collapsed,
        attribution: b.attribution,
        disagreement: disagreementOf(b.attribution)?.long ?? null,
        cause_code: b.causeCode,
        cause_disagreement: b.causeDisagreement || null,
        ...changedBlockJson(b),
      };
    }),
  };
}
