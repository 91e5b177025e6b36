import type { AdviseRetentionResponse } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { formatCost, formatCount } from "./numbers";
import { renderTable } from "./table";

/** Below what formatCost shows, two retentions cost the same. */
const SAME_COST = 0.00005;

/** The verdict line: which retention would have cost least, and by how much against the default and the runner-up. */
export function recommendation(response: AdviseRetentionResponse): string {
  const recommended = response.recommended;
  if (recommended === "") return "No recommendation: no calls recorded.";
  const currency = response.currency;
  const tie = response.savingVsNext < SAME_COST;
  // A server before the provider catalogue sends no default: its default was always 5m.
  const fallback = response.defaultRetention || "5m";
  if (recommended === fallback)
    return tie
      ? `Keep the ${fallback} default: no offered retention would have cost less.`
      : `Keep the ${fallback} default: it would have cost least, ${formatCost(response.savingVsNext)} ${currency} less than the next offered retention.`;
  const versusNext = tie
    ? " (a longer offered retention would have cost the same)"
    : response.savingVsNext < response.savingVsDefault
      ? `, ${formatCost(response.savingVsNext)} ${currency} less than the next offered retention`
      : "";
  return `Use ${recommended} retention: it would have cost ${formatCost(response.savingVsDefault)} ${currency} less than the ${fallback} default${versusNext}.`;
}

export function formatAdvice(response: AdviseRetentionResponse): string {
  const lines = [
    `Retention advice for ${
      response.workspace !== ""
        ? `workspace ${response.workspace} (${formatCount(response.sessions)} session${response.sessions === 1 ? "" : "s"})`
        : `session ${response.sessionId}`
    }: ${formatCount(response.calls)} recorded call${
      response.calls === 1 ? "" : "s"
    }, recorded cost ${formatCost(response.recordedCost)} ${response.currency}`,
    "",
    ...renderTable(
      [
        { header: "RETENTION" },
        { header: "COST", align: "right" },
        { header: "HITS", align: "right" },
        { header: "MISSES", align: "right" },
        { header: "OFFERED" },
      ],
      response.retentions.map((r) => [
        r.retention === response.recommended ? `${r.retention} *` : r.retention,
        formatCost(r.cost),
        formatCount(r.hits),
        formatCount(r.misses),
        r.offered ? "yes" : "no (priced, not recommended)",
      ]),
    ),
    "",
    recommendation(response),
  ];
  return `${lines.join("\n")}\n`;
}

export function adviceToJson(response: AdviseRetentionResponse) {
  return {
    session_id: response.sessionId === "" ? null : response.sessionId,
    workspace: response.workspace === "" ? null : response.workspace,
    sessions: response.sessions,
    calls: response.calls,
    currency: response.currency,
    recorded_cost: response.recordedCost,
    retentions: response.retentions.map((r) => ({
      retention: r.retention,
      cost: r.cost,
      hits: r.hits,
      misses: r.misses,
      offered: r.offered,
    })),
    recommended: response.recommended === "" ? null : response.recommended,
    saving_vs_default: response.savingVsDefault,
    saving_vs_next: response.savingVsNext,
    recommendation: recommendation(response),
  };
}
