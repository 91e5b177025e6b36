// TraceSession: every build of a session with what prompt-assembly saw (fingerprints, what changed,
// rules decision, date notices) next to what the provider billed (usage, cost, collapse), and
// whether the two agree. Rows are per request_id: a body built twice is one build, and the usage
// shown is the latest call that sent it.

import type { BuildTrace } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { type AttributionThresholds, attributeBuild, ourVerdictOf } from "../domain/attribution";
import { LEGACY_CAUSE_CODE } from "../domain/collapse-totals";
import { OUR_BUILDS } from "../domain/model";
import type { SessionTraceRows, StoredChange, StoredCollapse, StoredObservation, StoredUsage } from "./ports";
import { toUsageRecorded } from "./proto-mapping";

interface BuildParts {
  observation?: StoredObservation;
  change?: StoredChange;
  usage?: StoredUsage;
  collapse?: StoredCollapse;
}

function earlier<T extends { occurredAtMs: number }>(current: T | undefined, next: T): T {
  return current === undefined || next.occurredAtMs < current.occurredAtMs ? next : current;
}

function builtAtOf(parts: BuildParts): number {
  return parts.observation?.occurredAtMs ?? parts.change?.occurredAtMs ?? parts.usage?.calledAtMs ?? 0;
}

function traceOf(requestId: string, parts: BuildParts, thresholds: AttributionThresholds): BuildTrace {
  const { observation, change, usage, collapse } = parts;
  const prefix = {
    observed: observation
      ? { firstBuild: observation.firstBuild, ...(observation.prefixChanged === true ? { prefixChanged: true } : {}) }
      : null,
    change: change ?? null,
  };
  // The collapse's record first, as for the sections: it is what ListCollapses shows.
  const firstChangedBlock = (collapse ? collapse.firstChangedBlock : change?.firstChangedBlock) ?? null;
  const divergedOffset = (collapse ? collapse.divergedOffset : change?.divergedOffset) ?? null;
  const attribution = collapse
    ? collapse.attribution === "none"
      ? "agree"
      : collapse.attribution
    : attributeBuild(ourVerdictOf(prefix), usage ?? null, false, thresholds);
  return {
    requestId,
    builtAtMs: builtAtOf(parts),
    sectionHashes: observation ? observation.sections.map((s) => `${s.key}:${s.sha256}`) : [],
    toolsHash: observation?.toolsHash ?? "",
    firstBuild: observation?.firstBuild ?? false,
    prefixChanged: change !== undefined,
    // A collapsed build is explained by its collapse record, the one ListCollapses (prefixctl
    // collapses) shows: it may have been recovered or re-explained after the PrefixChanged, and it
    // carries the provider's side, so trace and collapses never tell one collapse two ways.
    changedSections: collapse ? [...collapse.changedSections] : change ? [...change.changedSections] : [],
    toolsChangeKind: change?.toolsChangeKind ?? (collapse?.toolsChanged ? "definitions" : observation ? "none" : ""),
    historyRewritten: collapse?.historyRewritten ?? change?.historyRewritten ?? false,
    cause: collapse?.cause ?? change?.cause ?? (observation?.firstBuild ? "first build" : ""),
    rulesDecision: observation?.rulesDecision ?? "",
    dateNotices: observation ? [...observation.dateNotices] : [],
    anchorDate: observation?.anchorDate ?? "",
    estimatedTokens: observation?.estimatedTokens ?? 0,
    hasUsage: usage !== undefined,
    ...(usage ? { usage: toUsageRecorded(usage) } : {}),
    cost: usage?.cost ?? 0,
    collapsed: collapse !== undefined,
    attribution,
    causeCode: collapse ? collapse.causeCode || LEGACY_CAUSE_CODE : "",
    causeDisagreement: collapse?.causeDisagreement ?? "",
    source: observation?.trafficSource ?? usage?.trafficSource ?? collapse?.trafficSource ?? OUR_BUILDS,
    ...(firstChangedBlock === null ? {} : { firstChangedBlock: { ...firstChangedBlock } }),
    ...(divergedOffset === null ? {} : { divergedOffset }),
  };
}

/** The session's last `limit` builds, oldest first. */
export function buildSessionTrace(
  rows: SessionTraceRows,
  limit: number,
  thresholds: AttributionThresholds,
): BuildTrace[] {
  const byRequest = new Map<string, BuildParts>();
  const partsOf = (requestId: string) => {
    let parts = byRequest.get(requestId);
    if (!parts) {
      parts = {};
      byRequest.set(requestId, parts);
    }
    return parts;
  };
  for (const observation of rows.observations) {
    const parts = partsOf(observation.requestId);
    parts.observation = earlier(parts.observation, observation);
  }
  for (const change of rows.changes) {
    const parts = partsOf(change.requestId);
    parts.change = earlier(parts.change, change);
  }
  for (const usage of rows.usages) {
    const parts = partsOf(usage.requestId);
    const current = parts.usage;
    if (
      current === undefined ||
      usage.calledAtMs > current.calledAtMs ||
      (usage.calledAtMs === current.calledAtMs && usage.id > current.id)
    )
      parts.usage = usage;
  }
  const collapseByUsage = new Map(rows.collapses.map((c) => [c.usageId, c]));
  for (const [, parts] of byRequest) {
    if (parts.usage) {
      const collapse = collapseByUsage.get(parts.usage.id);
      if (collapse) parts.collapse = collapse;
    }
  }
  return [...byRequest]
    .map(([requestId, parts]) => traceOf(requestId, parts, thresholds))
    .sort((a, b) => a.builtAtMs - b.builtAtMs || (a.requestId < b.requestId ? -1 : 1))
    .slice(-limit);
}
