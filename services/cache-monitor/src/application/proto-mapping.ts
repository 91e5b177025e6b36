// Stored rows ↔ the contract's messages (prefixguard.events.v1 / prefixguard.monitor.v1).

import type { CacheCollapsed } from "@prefix-guard/proto/events/v1/collapse_events";
import type { ProviderCacheReport, UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
import { LEGACY_CAUSE_CODE } from "../domain/collapse-totals";
import { OUR_BUILDS, type UsageFacts } from "../domain/model";
import type { StoredCollapse, StoredUsage } from "./ports";

export function toCacheCollapsed(collapse: StoredCollapse): CacheCollapsed {
  return {
    requestId: collapse.requestId,
    model: collapse.model,
    promptTokens: collapse.promptTokens,
    cachedTokens: collapse.cachedTokens,
    cachedRatio: collapse.cachedShare,
    baselineRatio: collapse.baselineShare,
    changedSections: [...collapse.changedSections],
    cause: collapse.cause,
    cost: collapse.cost,
    expectedCost: collapse.expectedCost,
    extraCost: collapse.extraCost,
    attribution: collapse.attribution,
    providerCacheMissReason: collapse.providerCacheMissReason,
    calledAtMs: collapse.calledAtMs,
    historyRewritten: collapse.historyRewritten,
    toolsChanged: collapse.toolsChanged,
    causeCode: collapse.causeCode || LEGACY_CAUSE_CODE,
    causeDisagreement: collapse.causeDisagreement,
    source: collapse.trafficSource ?? OUR_BUILDS,
    ...(collapse.firstChangedBlock ? { firstChangedBlock: { ...collapse.firstChangedBlock } } : {}),
    ...(collapse.divergedOffset !== null && collapse.divergedOffset !== undefined
      ? { divergedOffset: collapse.divergedOffset }
      : {}),
  };
}

function toProviderReport(report: NonNullable<UsageFacts["providerReport"]>): ProviderCacheReport {
  return {
    cacheMissReason: report.cacheMissReason,
    cacheReadInputTokens: report.cacheReadInputTokens,
    cacheCreationInputTokens: report.cacheCreationInputTokens,
    openaiCachedTokens: report.openaiCachedTokens,
    rawJson: report.rawJson,
  };
}

/** The usage as cache-monitor accepted it (called_at_ms filled in when the harness left it 0). */
export function toUsageRecorded(usage: UsageFacts | StoredUsage): UsageRecorded {
  return {
    requestId: usage.requestId,
    model: usage.model,
    promptTokens: usage.promptTokens,
    cachedTokens: usage.cachedTokens,
    completionTokens: usage.completionTokens,
    cacheCreationTokens: usage.cacheCreationTokens,
    ...(usage.cacheCreation1hTokens > 0 ? { cacheCreation1hTokens: usage.cacheCreation1hTokens } : {}),
    ...(usage.reportedCost !== null ? { reportedCost: usage.reportedCost } : {}),
    provider: usage.provider,
    ...(usage.providerReport !== null ? { providerReport: toProviderReport(usage.providerReport) } : {}),
    calledAtMs: usage.calledAtMs,
    ...(usage.trafficSource !== undefined ? { source: usage.trafficSource } : {}),
  };
}
