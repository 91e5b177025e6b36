// How rows decode into cache-monitor's stored shapes (application/ports.ts), shared by its three stores.
import { type Executor, opaqueTransactions } from "@prefix-guard/db";
import type {
  MonitorTransaction,
  StoredChange,
  StoredCollapse,
  StoredCut,
  StoredObservation,
  StoredUsage,
} from "../../application/ports";
import {
  type ChangedBlockRef,
  type ProviderCacheReport,
  TRAFFIC_SOURCES,
  type TrafficSource,
} from "../../domain/model";

/**
 * A connection, an open transaction, or the application's handle of one: every method runs on
 * whichever it is given.
 */
export type DbExecutor = Executor<MonitorTransaction>;

export const { handleOf, transactionOf, knexOf } = opaqueTransactions<MonitorTransaction>();

export type Row = Record<string, unknown>;

export const num = (value: unknown): number => Number(value ?? 0);
export const bool = (value: unknown): boolean => value === true || value === 1 || value === "1";
export const str = (value: unknown): string => (value === null || value === undefined ? "" : String(value));

/** A traffic_source column: NULL (our builds, or stored before) reads as absent. */
export function trafficSourceColumn(value: unknown): { trafficSource?: TrafficSource } {
  const text = str(value);
  return (TRAFFIC_SOURCES as readonly string[]).includes(text) ? { trafficSource: text as TrafficSource } : {};
}

/** The changed_block_* and diverged_offset columns of a change or collapse row; NULL reads as absent. */
export function changedBlockColumns(row: Row): {
  firstChangedBlock?: ChangedBlockRef;
  divergedOffset?: number;
} {
  return {
    ...(row.changed_block_index === null || row.changed_block_index === undefined
      ? {}
      : {
          firstChangedBlock: {
            index: num(row.changed_block_index),
            kind: str(row.changed_block_kind),
            role: str(row.changed_block_role),
          },
        }),
    ...(row.diverged_offset === null || row.diverged_offset === undefined
      ? {}
      : { divergedOffset: num(row.diverged_offset) }),
  };
}

/** The columns changedBlockColumns reads, from a change or a collapse explanation. */
export function changedBlockRow(facts: {
  readonly firstChangedBlock?: ChangedBlockRef | null;
  readonly divergedOffset?: number | null;
}): Row {
  const block = facts.firstChangedBlock ?? null;
  return {
    changed_block_index: block?.index ?? null,
    changed_block_kind: block?.kind ?? null,
    changed_block_role: block?.role ?? null,
    diverged_offset: facts.divergedOffset ?? null,
  };
}

const withCut = (cut: StoredCut | null): { cut?: StoredCut } => (cut === null ? {} : { cut });

function cutOf(text: unknown): StoredCut | null {
  const parsed = parseJson<Row | null>(text, null);
  if (parsed === null || !Array.isArray(parsed.blocks)) return null;
  return {
    blocks: parsed.blocks.map((b: Row) => ({
      index: num(b.index),
      kind: str(b.kind),
      role: str(b.role),
      sha256: str(b.sha256),
      bytes: num(b.bytes),
      offset: num(b.offset),
    })),
    totalBytes: num(parsed.totalBytes),
  };
}

export function parseJson<T>(text: unknown, fallback: T): T {
  try {
    return text === null || text === undefined ? fallback : (JSON.parse(String(text)) as T);
  } catch {
    return fallback;
  }
}

export function stringArray(text: unknown): string[] {
  const parsed = parseJson<unknown>(text, []);
  return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === "string") : [];
}

export function toUsage(row: Row): StoredUsage {
  const report = parseJson<ProviderCacheReport | null>(row.provider_report_json, null);
  return {
    id: num(row.id),
    eventId: str(row.event_id),
    sessionId: str(row.session_id),
    requestId: str(row.request_id),
    model: str(row.model),
    provider: str(row.provider),
    promptTokens: num(row.prompt_tokens),
    cachedTokens: num(row.cached_tokens),
    completionTokens: num(row.completion_tokens),
    cacheCreationTokens: num(row.cache_creation_tokens),
    cacheCreation1hTokens: num(row.cache_creation_1h_tokens),
    reportedCost: row.reported_cost === null || row.reported_cost === undefined ? null : num(row.reported_cost),
    providerReport: report,
    calledAtMs: num(row.called_at_ms),
    ...trafficSourceColumn(row.traffic_source),
    cost: num(row.cost),
    currency: str(row.currency),
    source: str(row.source) === "topic" ? "topic" : "rpc",
    recordedAtMs: num(row.recorded_at_ms),
    idempotencyKey: row.idempotency_key === null || row.idempotency_key === undefined ? null : str(row.idempotency_key),
    contentSha256: row.content_sha256 === null || row.content_sha256 === undefined ? null : str(row.content_sha256),
    providerResponseId: str(row.provider_response_id),
    unbuilt: bool(row.unbuilt),
  };
}

export function toCollapse(row: Row): StoredCollapse {
  return {
    id: num(row.id),
    usageId: num(row.usage_id),
    sessionId: str(row.session_id),
    requestId: str(row.request_id),
    model: str(row.model),
    promptTokens: num(row.prompt_tokens),
    cachedTokens: num(row.cached_tokens),
    cachedShare: num(row.cached_ratio),
    baselineShare: num(row.baseline_ratio),
    cost: num(row.cost),
    expectedCost: num(row.expected_cost),
    extraCost: num(row.extra_cost),
    changedSections: stringArray(row.changed_sections_json),
    toolsChanged: bool(row.tools_changed),
    historyRewritten: bool(row.history_rewritten),
    ourVerdict: str(row.our_verdict),
    cause: str(row.cause),
    attribution: str(row.attribution),
    providerCacheMissReason: str(row.provider_cache_miss_reason),
    causeCode: str(row.cause_code),
    causeDisagreement: str(row.cause_disagreement),
    ...trafficSourceColumn(row.traffic_source),
    ...changedBlockColumns(row),
    calledAtMs: num(row.called_at_ms),
    detectedAtMs: num(row.detected_at_ms),
    updatedAtMs: num(row.updated_at_ms),
  };
}

export function toObservation(row: Row): StoredObservation {
  const sections = parseJson<unknown>(row.sections_json, []);
  return {
    eventId: str(row.event_id),
    sessionId: str(row.session_id),
    requestId: str(row.request_id),
    occurredAtMs: num(row.occurred_at_ms),
    sections: Array.isArray(sections)
      ? sections.map((s: Row) => ({ key: str(s.key), sha256: str(s.sha256), chars: num(s.chars) }))
      : [],
    toolsHash: str(row.tools_hash),
    historyHash: str(row.history_hash),
    messages: num(row.messages),
    firstBuild: bool(row.first_build),
    rulesDecision: str(row.rules_decision),
    dateNotices: stringArray(row.date_notices_json),
    anchorDate: str(row.anchor_date),
    estimatedTokens: num(row.estimated_tokens),
    model: str(row.model),
    compactionGeneration: num(row.compaction_generation),
    compactionRequest: bool(row.compaction_request),
    workspace: str(row.workspace),
    cacheRetention: str(row.cache_retention),
    scope: str(row.scope),
    owner: str(row.owner),
    prefixChanged: row.prefix_changed === null || row.prefix_changed === undefined ? null : bool(row.prefix_changed),
    ...trafficSourceColumn(row.traffic_source),
    ...withCut(cutOf(row.cut_json)),
  };
}

export function toChange(row: Row): StoredChange {
  return {
    eventId: str(row.event_id),
    sessionId: str(row.session_id),
    requestId: str(row.request_id),
    occurredAtMs: num(row.occurred_at_ms),
    changedSections: stringArray(row.changed_sections_json),
    toolsChanged: bool(row.tools_changed),
    toolsChangeKind: str(row.tools_change_kind),
    historyRewritten: bool(row.history_rewritten),
    cause: str(row.cause),
    bytesAfterBreak: num(row.bytes_after_break),
    tokensAfterBreak: num(row.tokens_after_break),
    messages: num(row.messages),
    ...trafficSourceColumn(row.traffic_source),
    ...changedBlockColumns(row),
  };
}

export function firstInsertedId(result: unknown): number {
  const first = Array.isArray(result) ? result[0] : result;
  if (typeof first === "object" && first !== null && "id" in first) return num((first as Row).id);
  return num(first);
}
