// RecordUsage's input rules. A usage that breaks them cannot be priced or compared, so it is
// refused whole (nothing stored) with the offending field named.

import { ValidationError } from "@prefix-guard/errors";
import { MAX_ID_CHARS, requireBoundedText, requireId } from "@prefix-guard/events/ids";
import { checkJsonLimits } from "@prefix-guard/events/json-limits";
import { type ProviderCacheReport, TRAFFIC_SOURCES, type TrafficSource, type UsageFacts } from "./model";

export const MAX_MODEL_CHARS = 200;
const MAX_PROVIDER_CHARS = 100;
const MAX_MISS_REASON_CHARS = 2_000;
const MAX_RAW_REPORT_CHARS = 64_000;

/** The usage as it arrived (gRPC or llm.usage.v1), before any check. */
export interface UsageInput {
  readonly requestId: string;
  readonly model: string;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  readonly cacheCreationTokens: number;
  /** Of cacheCreationTokens, the 1-hour writes; absent = 0. */
  readonly cacheCreation1hTokens?: number | undefined;
  readonly reportedCost?: number | undefined;
  readonly provider: string;
  readonly providerReport?: ProviderCacheReport | undefined;
  readonly calledAtMs: number;
  /** UsageRecorded.source: unset or "" = not said (our builds). */
  readonly source?: string | undefined;
}

/**
 * An event's `source` (FingerprintObserved, PrefixChanged, UsageRecorded): unset or "" says nothing
 * (our builds), anything else must be one of TRAFFIC_SOURCES. A closed set: it labels metrics.
 */
export function trafficSourceOf(source: string | undefined, field: string): { trafficSource?: TrafficSource } {
  if (source === undefined || source === "") return {};
  if (!(TRAFFIC_SOURCES as readonly string[]).includes(source))
    throw new ValidationError(field, `must be empty or one of ${TRAFFIC_SOURCES.join(", ")}`);
  return { trafficSource: source as TrafficSource };
}

function requireCount(field: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new ValidationError(field, "must be a non-negative integer");
  return value;
}

export function validateSessionId(sessionId: string): string {
  return requireId(sessionId, "session_id", MAX_ID_CHARS);
}

/** The workspaces prefix-guard stores are paths or names of at most this many characters. */
export const MAX_WORKSPACE_CHARS = 512;

/** What AdviseRetention prices: one session's calls, or those of every session of a workspace. */
export type AdviceScope = { readonly sessionId: string } | { readonly workspace: string };

export function validateAdviceScope(sessionId: string, workspace: string): AdviceScope {
  if (sessionId !== "" && workspace !== "")
    throw new ValidationError("workspace", "give either session_id or workspace, not both");
  if (workspace === "") return { sessionId: validateSessionId(sessionId) };
  if (workspace.length > MAX_WORKSPACE_CHARS || workspace.trim() !== workspace)
    throw new ValidationError(
      "workspace",
      `must be at most ${MAX_WORKSPACE_CHARS} characters without surrounding spaces`,
    );
  return { workspace };
}

/**
 * @param receivedAtMs stands in for a missing called_at_ms (0): the harness did not say, and the
 *   arrival time is the best estimate of when the call happened.
 * @param path what the fields are named under in errors: `usage` (typed) or `raw` (parsed from a
 *   provider's usage object, whose own fields the parser has already checked).
 */
export function validateUsage(usage: UsageInput | undefined, receivedAtMs: number, path = "usage"): UsageFacts {
  if (usage === undefined) throw new ValidationError(path, "is required");
  const requestId = requireId(usage.requestId, `${path}.request_id`, MAX_ID_CHARS);
  const model = requireBoundedText(usage.model, `${path}.model`, MAX_MODEL_CHARS);
  const promptTokens = requireCount(`${path}.prompt_tokens`, usage.promptTokens);
  if (promptTokens === 0) throw new ValidationError(`${path}.prompt_tokens`, "must be > 0 (every call sends a prompt)");
  const cachedTokens = requireCount(`${path}.cached_tokens`, usage.cachedTokens);
  if (cachedTokens > promptTokens)
    throw new ValidationError(`${path}.cached_tokens`, `${cachedTokens} exceeds prompt_tokens ${promptTokens}`);
  const cacheCreationTokens = requireCount(`${path}.cache_creation_tokens`, usage.cacheCreationTokens);
  if (cachedTokens + cacheCreationTokens > promptTokens)
    throw new ValidationError(
      `${path}.cache_creation_tokens`,
      `cached_tokens + cache_creation_tokens (${cachedTokens + cacheCreationTokens}) exceed prompt_tokens ${promptTokens}`,
    );
  const cacheCreation1hTokens = requireCount(`${path}.cache_creation_1h_tokens`, usage.cacheCreation1hTokens ?? 0);
  if (cacheCreation1hTokens > cacheCreationTokens)
    throw new ValidationError(
      `${path}.cache_creation_1h_tokens`,
      `${cacheCreation1hTokens} exceeds cache_creation_tokens ${cacheCreationTokens}`,
    );
  const completionTokens = requireCount(`${path}.completion_tokens`, usage.completionTokens);
  if (usage.reportedCost !== undefined && (!Number.isFinite(usage.reportedCost) || usage.reportedCost < 0))
    throw new ValidationError(`${path}.reported_cost`, "must be a finite, non-negative number");
  if (usage.provider.length > MAX_PROVIDER_CHARS)
    throw new ValidationError(`${path}.provider`, `must be at most ${MAX_PROVIDER_CHARS} characters`);
  if (!Number.isSafeInteger(usage.calledAtMs) || usage.calledAtMs < 0)
    throw new ValidationError(`${path}.called_at_ms`, "must be a non-negative integer (UTC ms)");
  const trafficSource = trafficSourceOf(usage.source, `${path}.source`);
  const report = usage.providerReport;
  if (report !== undefined) {
    requireCount(`${path}.provider_report.cache_read_input_tokens`, report.cacheReadInputTokens);
    requireCount(`${path}.provider_report.cache_creation_input_tokens`, report.cacheCreationInputTokens);
    requireCount(`${path}.provider_report.openai_cached_tokens`, report.openaiCachedTokens);
    if (report.cacheMissReason.length > MAX_MISS_REASON_CHARS)
      throw new ValidationError(
        `${path}.provider_report.cache_miss_reason`,
        `must be at most ${MAX_MISS_REASON_CHARS} characters`,
      );
    if (report.rawJson.length > MAX_RAW_REPORT_CHARS)
      throw new ValidationError(
        `${path}.provider_report.raw_json`,
        `must be at most ${MAX_RAW_REPORT_CHARS} characters`,
      );
    // Kept as text for operators, whose tools parse it: held to the same shape as every JSON field.
    checkJsonLimits(report.rawJson, `${path}.provider_report.raw_json`);
  }
  return {
    requestId,
    model,
    provider: usage.provider,
    promptTokens,
    cachedTokens,
    completionTokens,
    cacheCreationTokens,
    cacheCreation1hTokens,
    reportedCost: usage.reportedCost ?? null,
    providerReport:
      report === undefined
        ? null
        : {
            cacheMissReason: report.cacheMissReason,
            cacheReadInputTokens: report.cacheReadInputTokens,
            cacheCreationInputTokens: report.cacheCreationInputTokens,
            openaiCachedTokens: report.openaiCachedTokens,
            rawJson: report.rawJson,
          },
    calledAtMs: usage.calledAtMs > 0 ? usage.calledAtMs : receivedAtMs,
    ...trafficSource,
  };
}

/** A page size: 0 means the default, more than `max` is cut to it. */
export function boundedLimit(limit: number, fallback: number, max: number, field: string): number {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new ValidationError(field, "must be a non-negative integer");
  return limit === 0 ? fallback : Math.min(limit, max);
}

export function validateSinceMs(sinceMs: number): number {
  if (!Number.isSafeInteger(sinceMs) || sinceMs < 0)
    throw new ValidationError("since_ms", "must be a non-negative integer (UTC ms)");
  return sinceMs;
}
