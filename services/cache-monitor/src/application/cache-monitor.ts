import { type Attributes, SpanStatusCode, trace } from "@opentelemetry/api";
import { type Caller, isConfined, requireVisibleSession, workspaceAllowed } from "@prefix-guard/access";
import { ConflictError, FailedPreconditionError, NotFoundError, PermissionDeniedError } from "@prefix-guard/errors";
import type { CacheCollapsed, CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
import type { LlmUsageEvent, UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
import type {
  AdviseRetentionResponse,
  BuildTrace,
  CollapseRow,
  ListCollapsesResponse,
  RawProviderUsage,
  SectionTotal,
} from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { BUILTIN_PROVIDER_CATALOGUE, type ProviderCatalogue, type Retention } from "@prefix-guard/providers";
import { type AttributionThresholds, DEFAULT_ATTRIBUTION_THRESHOLDS } from "../domain/attribution";
import { assessCall, type CollapseExplanation, explainCollapse } from "../domain/call-assessment";
import { type CauseKind, causeKindOf } from "../domain/cause-taxonomy";
import type { CollapseThresholds } from "../domain/collapse-detection";
import { OUR_BUILDS, type TrafficSource, type UsageFacts } from "../domain/model";
import { defaultRetentionOf, withRetentionsSold } from "../domain/price-catalogue";
import { type PriceBook, pricesFor } from "../domain/pricing";
import { adviseRetention } from "../domain/retention-advisor";
import { checkRetryOf, type UsageIdentity, usageIdentityOf } from "../domain/usage-identity";
import { usageInputOf } from "../domain/usage-intake/raw-usage";
import {
  boundedLimit,
  trafficSourceOf,
  type UsageInput,
  validateAdviceScope,
  validateSessionId,
  validateSinceMs,
  validateUsage,
} from "../domain/validation";
import { BuildArrivals } from "./build-arrivals";
import { cacheCollapsedEvent, usageRecordedEvent, type ValidPrefixEvent, type ValidUsageEvent } from "./monitor-events";
import type { MonitorStore, MonitorTransaction, StoredCollapse, UsageSource } from "./ports";
import { toCacheCollapsed, toUsageRecorded } from "./proto-mapping";
import { buildSessionTrace } from "./session-trace";

/**
 * Where cache-monitor's events go. `tx` is the transaction that stored what the event reports,
 * so an outbox implementation publishes the event if and only if that commit happened.
 */
export interface MonitorEventSink {
  usageRecorded(event: LlmUsageEvent, tx: MonitorTransaction): Promise<void>;
  collapseDetected(event: CacheCollapseEvent, tx: MonitorTransaction): Promise<void>;
}

/** One recorded call, as the metrics adapter is told it. */
export interface RecordedUsageFigures {
  readonly model: string;
  /** How the usage came in: RecordUsage (rpc) or llm.usage.v1 (topic). */
  readonly source: UsageSource;
  /** Who observed the call's request: our builds or the gateway. */
  readonly trafficSource: TrafficSource;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly cachedShare: number;
  readonly cost: number;
}

/** What the metrics adapter is told, after the transaction committed. */
export interface CacheMonitorObserver {
  usageRecorded(args: RecordedUsageFigures): void;
  /** `workspace` is the build's ("" when the usage has no build of prefix-guard behind it). */
  collapseDetected(args: {
    sections: readonly string[];
    cause: CauseKind;
    extraCost: number;
    workspace: string;
    trafficSource: TrafficSource;
  }): void;
}

export interface CacheMonitorLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface CacheMonitorDeps {
  readonly store: MonitorStore;
  readonly events: MonitorEventSink;
  readonly prices: PriceBook;
  /** How long each model's cache lives when a build opts into nothing; absent = the built-in catalogue. */
  readonly catalogue?: ProviderCatalogue;
  readonly thresholds: CollapseThresholds;
  readonly attributionThresholds?: AttributionThresholds;
  readonly now: () => number;
  readonly newEventId: () => string;
  /** Lower-case hex sha256 of the UTF-8 text; names a RecordUsage call so a repeat of it is recognised. */
  readonly sha256: (text: string) => string;
  readonly logger: CacheMonitorLogger;
  readonly observer?: CacheMonitorObserver;
  /** How RecordUsage waits for its build's FingerprintObserved (and PrefixChanged); defaults to DEFAULT_BUILD_WAIT. */
  readonly buildWait?: BuildWait;
}

/**
 * A RecordUsage may arrive before its build's FingerprintObserved (Kafka is asynchronous), or
 * between it and the PrefixChanged the observation announced: it waits up to `timeoutMs`, woken by
 * `arrivals` when this process's consumer stores either, and re-reads the database every `pollMs`
 * for what another replica's consumer stored.
 */
export interface BuildWait {
  readonly arrivals: BuildArrivals;
  readonly timeoutMs: number;
  readonly pollMs: number;
}

export const DEFAULT_BUILD_WAIT_MS = 3_000;
/** Only other replicas' consumers need polling; this process's wake the waiter at once. */
export const BUILD_POLL_MS = 100;

/** Exactly one of `usage` (typed) and `raw` (the provider's usage object, parsed here). */
export interface RecordUsageInput {
  readonly sessionId: string;
  readonly usage?: UsageRecorded | undefined;
  readonly raw?: RawProviderUsage | undefined;
  /** "" = the default key (usageIdentityOf). */
  readonly idempotencyKey?: string | undefined;
  readonly providerResponseId?: string | undefined;
  /** The request_id names no build of prefix-guard; accepted without waiting for one. */
  readonly unbuilt?: boolean | undefined;
}

/** Where a usage came from: RecordUsage (published on llm.usage.v1 by us) or llm.usage.v1 itself. */
export type UsageOrigin =
  | { readonly source: "rpc"; readonly caller: Caller }
  | { readonly source: "topic"; readonly eventId: string; readonly occurredAtMs: number };

export interface RecordUsageResult {
  readonly cost: number;
  readonly collapse: CacheCollapsed | null;
  /** The same call was recorded before (a redelivery or a repeated RecordUsage); nothing changed. */
  readonly duplicate: boolean;
  /** The key a RecordUsage is stored under; "" for a usage from llm.usage.v1. */
  readonly idempotencyKey: string;
}

export type PrefixEventOutcome =
  | { readonly kind: "duplicate" }
  | { readonly kind: "applied"; readonly reexplainedCollapses: number };

export interface ListCollapsesInput {
  readonly sinceMs: number;
  readonly sessionId: string;
  readonly limit: number;
}

const DEFAULT_COLLAPSE_LIMIT = 100;
const MAX_COLLAPSE_LIMIT = 100_000;
const DEFAULT_TRACE_LIMIT = 200;
const MAX_ADVISED_CALLS = 10_000;
/** Sessions of a workspace priced by one AdviseRetention at most (the most recently active first). */
const MAX_ADVISED_SESSIONS = 500;
const MAX_TRACE_LIMIT = 10_000;

const tracer = trace.getTracer("prefix-guard.cache-monitor");

/**
 * The recorded call is a chat completion: GenAI semantic conventions name its span
 * `{gen_ai.operation.name} {gen_ai.request.model}` (the operation alone while the model is unknown).
 */
const GEN_AI_OPERATION = "chat";

export function genAiSpanName(model: string): string {
  return model.trim() === "" ? GEN_AI_OPERATION : `${GEN_AI_OPERATION} ${model}`;
}

/**
 * OpenTelemetry GenAI semantic-convention attributes of the call being recorded, read from the
 * request as sent: cache reads and writes under the current names (`cache_write` replaced
 * `cache_creation`), the session as `gen_ai.conversation.id`.
 */
function genAiAttributes(sessionId: string, usage: UsageInput | undefined): Attributes {
  const attributes: Attributes = {
    "gen_ai.operation.name": GEN_AI_OPERATION,
    "gen_ai.conversation.id": sessionId,
    "session.id": sessionId,
  };
  if (usage === undefined) return attributes;
  attributes["gen_ai.request.model"] = usage.model;
  attributes["gen_ai.usage.input_tokens"] = usage.promptTokens;
  attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cachedTokens;
  attributes["gen_ai.usage.cache_write.input_tokens"] = usage.cacheCreationTokens;
  if ((usage.cacheCreation1hTokens ?? 0) > 0)
    attributes["prefix_guard.usage.cache_write_1h.input_tokens"] = usage.cacheCreation1hTokens ?? 0;
  attributes["gen_ai.usage.output_tokens"] = usage.completionTokens;
  if (usage.provider !== "") attributes["gen_ai.provider.name"] = usage.provider;
  attributes["prefix_guard.request_id"] = usage.requestId;
  return attributes;
}

function sameExplanation(collapse: StoredCollapse, explanation: CollapseExplanation): boolean {
  return (
    collapse.cause === explanation.cause &&
    collapse.attribution === explanation.attribution &&
    collapse.ourVerdict === explanation.ourVerdict &&
    collapse.toolsChanged === explanation.toolsChanged &&
    collapse.historyRewritten === explanation.historyRewritten &&
    collapse.causeCode === explanation.causeCode &&
    collapse.causeDisagreement === explanation.causeDisagreement &&
    (collapse.trafficSource ?? OUR_BUILDS) === explanation.trafficSource &&
    (collapse.divergedOffset ?? null) === explanation.divergedOffset &&
    JSON.stringify(collapse.firstChangedBlock ?? null) === JSON.stringify(explanation.firstChangedBlock) &&
    JSON.stringify(collapse.changedSections) === JSON.stringify(explanation.changedSections)
  );
}

/**
 * Seed 001 §1.1 as a service: every LLM call's usage, priced, compared with its session's norm, and
 * joined with prompt-assembly's fingerprints of the same build, so "why did 811 pay 0.8953 instead
 * of 0.023 at 13:11" is answered from data (ListCollapses / TraceSession) instead of log archaeology.
 */
export class CacheMonitor {
  private readonly attributionThresholds: AttributionThresholds;
  private readonly buildWait: BuildWait;

  constructor(private readonly deps: CacheMonitorDeps) {
    this.attributionThresholds = deps.attributionThresholds ?? DEFAULT_ATTRIBUTION_THRESHOLDS;
    this.buildWait = deps.buildWait ?? {
      arrivals: new BuildArrivals(),
      timeoutMs: DEFAULT_BUILD_WAIT_MS,
      pollMs: BUILD_POLL_MS,
    };
  }

  /**
   * Stores one call's usage, detects a collapse and publishes what it found (cache.collapse.v1, and
   * the usage on llm.usage.v1 unless it came from there) in the same transaction. Runs inside a span
   * carrying the GenAI usage attributes, for both the gRPC and the topic path.
   */
  /** RecordUsage, for a caller: a harness records usage only on its own sessions. */
  async recordUsage(input: RecordUsageInput, caller: Caller): Promise<RecordUsageResult> {
    return this.recordUsageFrom(input, { source: "rpc", caller });
  }

  private async recordUsageFrom(input: RecordUsageInput, origin: UsageOrigin): Promise<RecordUsageResult> {
    return tracer.startActiveSpan(
      genAiSpanName(input.usage?.model ?? input.raw?.model ?? ""),
      { attributes: { ...genAiAttributes(input.sessionId, input.usage), "prefix_guard.usage.source": origin.source } },
      async (span) => {
        try {
          const { usage, path } = usageInputOf(input.usage, input.raw);
          if (input.raw !== undefined)
            span.setAttributes({
              ...genAiAttributes(input.sessionId, usage),
              "prefix_guard.usage.intake": "raw",
              "prefix_guard.usage.raw_provider": input.raw.provider,
            });
          const result = await this.recordValidatedUsage(input, usage, path, origin);
          span.setAttributes({
            "prefix_guard.cost": result.cost,
            "prefix_guard.cache.collapsed": result.collapse !== null,
            "prefix_guard.duplicate": result.duplicate,
          });
          return result;
        } catch (error) {
          span.recordException(error as Error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  }

  /** llm.usage.v1: the same as RecordUsage, deduplicated by event_id, never republished. */
  async applyUsageEvent(event: ValidUsageEvent): Promise<RecordUsageResult> {
    return this.recordUsageFrom(
      { sessionId: event.sessionId, usage: event.payload.value },
      { source: "topic", eventId: event.eventId, occurredAtMs: event.occurredAtMs },
    );
  }

  private async recordValidatedUsage(
    input: RecordUsageInput,
    usageInput: UsageInput | undefined,
    path: "usage" | "raw",
    origin: UsageOrigin,
  ): Promise<RecordUsageResult> {
    const { store, events, thresholds } = this.deps;
    const receivedAtMs = this.deps.now();
    const sessionId = validateSessionId(input.sessionId);
    const usage = validateUsage(usageInput, receivedAtMs, path);
    const unbuilt = input.unbuilt ?? false;
    const identity: UsageIdentity | null =
      origin.source === "rpc"
        ? usageIdentityOf(
            sessionId,
            usageInput,
            { idempotencyKey: input.idempotencyKey ?? "", providerResponseId: input.providerResponseId ?? "" },
            this.deps.sha256,
          )
        : null;
    const eventId = identity?.eventId ?? (origin.source === "topic" ? origin.eventId : "");
    // A usage from llm.usage.v1 has no caller to refuse; a retry of a stored record needs no build check.
    if (identity !== null && !unbuilt && (await store.storedUsage(eventId)) === null)
      await this.requireBuilt(sessionId, usage.requestId);
    // The gateway publishes a request's fingerprint and its usage together, on two topics read by
    // two consumers: the usage waits for them as a RecordUsage does, so the collapse is explained
    // (and counted in the metrics) by its block at once; past the wait it is recorded all the same.
    else if (origin.source === "topic" && usage.trafficSource === "gateway")
      await this.requireBuilt(sessionId, usage.requestId, "record_anyway");
    // After the build wait, so the build's own observation says whose session it is. A session no
    // build was observed for (a harness that builds its own bodies) has nothing of anyone else's.
    if (origin.source === "rpc") await this.requireVisible(origin.caller, sessionId);
    const outcome = await store.withSessionLock(sessionId, receivedAtMs, async (tx) => {
      const existing = await store.usages.findUsageByEventId(tx, eventId);
      if (existing !== null) {
        if (identity !== null) checkRetryOf(identity, existing.contentSha256);
        if (existing.sessionId !== sessionId || existing.requestId !== usage.requestId)
          throw new ConflictError(`event ${eventId} was recorded for another call`, {
            reason: "event_id_reused",
            context: { event_id: eventId },
          });
        const collapse = await store.collapses.findCollapseByUsage(tx, existing.id);
        return {
          duplicate: true,
          cost: existing.cost,
          collapse,
          assessment: null,
          workspace: "",
          trafficSource: OUR_BUILDS,
        };
      }
      const earlier = this.withDefaultRetentions(
        await store.usages.earlierCalls(
          tx,
          sessionId,
          { calledAtMs: usage.calledAtMs, id: null },
          // Small prompts and the first call do not count, so look further back than the window.
          thresholds.baselineCalls * 4 + 1,
        ),
      );
      const prefix = await store.observations.prefixJoin(tx, sessionId, usage.requestId);
      const assessment = assessCall({
        usage,
        prices: pricesFor(this.deps.prices, usage.model),
        earlier,
        prefix,
        thresholds,
        attributionThresholds: this.attributionThresholds,
      });
      const usageId = await store.usages.insertUsage(tx, {
        eventId,
        sessionId,
        usage,
        cost: assessment.cost,
        currency: this.deps.prices.currency,
        source: origin.source,
        recordedAtMs: receivedAtMs,
        ...(identity !== null
          ? {
              identity: {
                idempotencyKey: identity.idempotencyKey,
                contentSha256: identity.contentSha256,
                providerResponseId: identity.providerResponseId,
                unbuilt,
              },
            }
          : {}),
      });
      let collapse: StoredCollapse | null = null;
      if (assessment.collapse !== null) {
        collapse = await store.collapses.insertCollapse(tx, {
          usageId,
          sessionId,
          usage,
          facts: assessment.collapse,
          nowMs: receivedAtMs,
        });
        await events.collapseDetected(this.collapseEvent(sessionId, collapse, receivedAtMs), tx);
      }
      if (origin.source === "rpc") {
        await events.usageRecorded(
          usageRecordedEvent({ eventId, sessionId, occurredAtMs: receivedAtMs, usage: toUsageRecorded(usage) }),
          tx,
        );
      }
      return {
        duplicate: false,
        cost: assessment.cost,
        collapse,
        assessment,
        workspace: prefix.observed?.workspace ?? "",
        trafficSource: usage.trafficSource ?? prefix.observed?.trafficSource ?? OUR_BUILDS,
      };
    });
    if (!outcome.duplicate && outcome.assessment !== null) {
      this.deps.observer?.usageRecorded({
        model: usage.model,
        source: origin.source,
        trafficSource: outcome.trafficSource,
        promptTokens: usage.promptTokens,
        cachedTokens: usage.cachedTokens,
        cachedShare: outcome.assessment.detection.cachedShare,
        cost: outcome.cost,
      });
      if (outcome.assessment.collapse !== null) {
        this.deps.observer?.collapseDetected({
          sections: outcome.assessment.collapse.totalsSections,
          cause: causeKindOf(outcome.assessment.collapse.causeCode),
          extraCost: outcome.assessment.collapse.extraCost,
          workspace: outcome.workspace,
          trafficSource: outcome.assessment.collapse.trafficSource,
        });
        this.logCollapse(sessionId, usage, outcome.collapse);
      }
    }
    return {
      cost: outcome.cost,
      collapse: outcome.collapse ? toCacheCollapsed(outcome.collapse) : null,
      duplicate: outcome.duplicate,
      idempotencyKey: identity?.idempotencyKey ?? "",
    };
  }

  /**
   * A harness is answered only about sessions its own (scope, owner, workspace), as their observed
   * builds say. A session no build of was observed has no owner here, so it is as missing to a
   * harness as another tenant's: otherwise an unknown id would answer differently from a foreign one,
   * and anyone could write usage into a session before its first build arrived. Fleet roles (the
   * gateway records as a peer) see every session.
   */
  private async requireVisible(caller: Caller, sessionId: string): Promise<void> {
    if (!isConfined(caller)) return;
    requireVisibleSession(caller, (await this.deps.store.sessionOwnership(sessionId)) ?? undefined, sessionId);
  }

  /**
   * FAILED_PRECONDITION unless prefix-guard built `requestId`: a usage joined with no build would be
   * priced and compared but never explained, which is what the harness must say it wants (unbuilt).
   * The build's observation may still be on its way through Kafka, so wait for it (BuildWait), and
   * for the PrefixChanged it announced (docs/decisions/awaited-prefix-change.md): answered between
   * the two, the call would be explained as if our prefix had not changed (provider_only) and the
   * stored collapse re-explained a moment later, so the answer would contradict the record.
   * `record_anyway`: the same wait, and past it the usage is recorded without its build (explained
   * when the build's events come).
   */
  private async requireBuilt(
    sessionId: string,
    requestId: string,
    unbuilt: "refuse" | "record_anyway" = "refuse",
  ): Promise<void> {
    const { arrivals, timeoutMs, pollMs } = this.buildWait;
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const remaining = deadline - performance.now();
      // Registered before the read, so an event stored between the read and the wait wakes it.
      const arrival = remaining > 0 ? arrivals.next(sessionId, requestId, Math.min(remaining, pollMs)) : null;
      try {
        const built = await this.deps.store.buildArrival(sessionId, requestId);
        if (built === "complete") return;
        // Built, but the PrefixChanged is late: recorded now and explained as `unknown` (ourVerdictOf),
        // which the PrefixChanged replaces, republished, when it comes.
        if (arrival === null && (built === "awaiting_change" || unbuilt === "record_anyway")) return;
        if (arrival === null)
          throw new FailedPreconditionError(
            `request_id: ${requestId} was not built by prefix-guard for session ${sessionId} ` +
              `(no FingerprintObserved within ${timeoutMs} ms); send unbuilt = true for a body the harness built itself`,
            { reason: "request_not_built", context: { field: "request_id", session_id: sessionId } },
          );
        await arrival.arrived;
      } finally {
        arrival?.cancel();
      }
    }
  }

  /**
   * prompt.prefix.v1: stores the observation or change (once per event_id) and, when a collapse of
   * the same request was recorded before it arrived, re-explains that collapse with the now-known
   * prefix data and republishes it — the join is the same whichever topic delivers first.
   */
  async applyPrefixEvent(event: ValidPrefixEvent): Promise<PrefixEventOutcome> {
    const { store, events } = this.deps;
    const nowMs = this.deps.now();
    const { sessionId, requestId } = event;
    const outcome = await store.withSessionLock(sessionId, nowMs, async (tx) => {
      const inserted =
        event.payload.$case === "observed"
          ? await store.observations.insertObservation(
              tx,
              {
                eventId: event.eventId,
                sessionId,
                requestId,
                occurredAtMs: event.occurredAtMs,
                sections: event.payload.value.sections.map((s) => ({ key: s.key, sha256: s.sha256, chars: s.chars })),
                toolsHash: event.payload.value.toolsHash,
                historyHash: event.payload.value.historyHash,
                messages: event.payload.value.messages,
                firstBuild: event.payload.value.firstBuild,
                rulesDecision: event.payload.value.rulesDecision,
                dateNotices: [...event.payload.value.dateNotices],
                anchorDate: event.payload.value.anchorDate,
                estimatedTokens: event.payload.value.estimatedTokens,
                model: event.payload.value.model,
                compactionGeneration: event.payload.value.compactionGeneration,
                compactionRequest: event.payload.value.compactionRequest,
                workspace: event.payload.value.workspace,
                cacheRetention: event.payload.value.cacheRetention,
                scope: event.payload.value.scope,
                owner: event.payload.value.owner,
                prefixChanged: event.payload.value.prefixChanged ?? null,
                ...trafficSourceOf(event.payload.value.source, "observed.source"),
                ...(event.payload.value.cut === undefined
                  ? {}
                  : {
                      cut: {
                        blocks: event.payload.value.cut.blocks.map((block) => ({ ...block })),
                        totalBytes: event.payload.value.cut.totalBytes,
                      },
                    }),
              },
              nowMs,
            )
          : await store.observations.insertChange(
              tx,
              {
                eventId: event.eventId,
                sessionId,
                requestId,
                occurredAtMs: event.occurredAtMs,
                changedSections: [...event.payload.value.changedSections],
                toolsChanged: event.payload.value.toolsChanged,
                toolsChangeKind: event.payload.value.toolsChangeKind,
                historyRewritten: event.payload.value.historyRewritten,
                cause: event.payload.value.cause,
                bytesAfterBreak: event.payload.value.bytesAfterBreak,
                tokensAfterBreak: event.payload.value.tokensAfterBreak,
                messages: event.payload.value.messages,
                ...trafficSourceOf(event.payload.value.source, "changed.source"),
                ...(event.payload.value.firstChangedBlock === undefined
                  ? {}
                  : { firstChangedBlock: { ...event.payload.value.firstChangedBlock } }),
                ...(event.payload.value.divergedOffset === undefined
                  ? {}
                  : { divergedOffset: event.payload.value.divergedOffset }),
              },
              nowMs,
            );
      if (!inserted) return { kind: "duplicate" } as const;
      const collapses = await store.collapses.collapsesOfRequest(tx, sessionId, requestId);
      if (collapses.length === 0) return { kind: "applied", reexplainedCollapses: 0 } as const;
      const prefix = await store.observations.prefixJoin(tx, sessionId, requestId);
      let reexplained = 0;
      for (const { collapse, usage } of collapses) {
        const previous =
          this.withDefaultRetentions(
            await store.usages.earlierCalls(tx, sessionId, { calledAtMs: usage.calledAtMs, id: usage.id }, 1),
          ).at(-1) ?? null;
        const explanation = explainCollapse(usage, prefix, previous, this.attributionThresholds);
        if (sameExplanation(collapse, explanation)) continue;
        const updated = await store.collapses.updateCollapseExplanation(tx, collapse, explanation, nowMs);
        await events.collapseDetected(this.collapseEvent(sessionId, updated, nowMs), tx);
        reexplained += 1;
      }
      return { kind: "applied", reexplainedCollapses: reexplained } as const;
    });
    // After the commit: a woken RecordUsage must find the observation (or the change it waits for) when it reads.
    this.buildWait.arrivals.announce(sessionId, requestId);
    if (outcome.kind === "applied" && outcome.reexplainedCollapses > 0)
      this.deps.logger.info(
        { session_id: sessionId, request_id: requestId, collapses: outcome.reexplainedCollapses },
        `cache collapse re-explained by late prefix event session=${sessionId} request=${requestId}`,
      );
    return outcome;
  }

  /** Collapses in the window, most recent first, with totals over the whole window (not just the page). */
  async listCollapses(input: ListCollapsesInput, caller: Caller): Promise<ListCollapsesResponse> {
    validateSinceMs(input.sinceMs);
    const limit = boundedLimit(input.limit, DEFAULT_COLLAPSE_LIMIT, MAX_COLLAPSE_LIMIT, "limit");
    const sessionId = input.sessionId.trim() === "" ? null : validateSessionId(input.sessionId);
    if (sessionId === null && isConfined(caller))
      throw new PermissionDeniedError(
        "ListCollapses across the fleet needs the role sre; a harness names its session_id",
        {
          reason: "role_required",
          context: { field: "session_id", roles: "sre" },
        },
      );
    if (sessionId !== null) await this.requireVisible(caller, sessionId);
    const query = { sinceMs: input.sinceMs, sessionId };
    const [rows, totals] = await Promise.all([
      this.deps.store.collapses.listCollapses(query, limit),
      this.deps.store.collapses.collapseTotals(query),
    ]);
    const collapses: CollapseRow[] = rows.map((row) => ({
      sessionId: row.sessionId,
      collapse: toCacheCollapsed(row),
    }));
    const sectionTotals: SectionTotal[] = totals.sections.map((t) => ({
      section: t.section,
      collapses: t.collapses,
      extraCost: t.extraCost,
    }));
    return {
      collapses,
      totals: sectionTotals,
      causeTotals: totals.causes.map((t) => ({
        causeCode: t.causeCode,
        collapses: t.collapses,
        extraCost: t.extraCost,
      })),
      totalCollapses: totals.totalCollapses,
      totalExtraCost: totals.totalExtraCost,
    };
  }

  async traceSession(sessionIdInput: string, limitInput: number, caller: Caller): Promise<BuildTrace[]> {
    const sessionId = validateSessionId(sessionIdInput);
    const limit = boundedLimit(limitInput, DEFAULT_TRACE_LIMIT, MAX_TRACE_LIMIT, "limit");
    await this.requireVisible(caller, sessionId);
    const rows = await this.deps.store.sessionTrace(sessionId, limit);
    return buildSessionTrace(rows, limit, this.attributionThresholds);
  }

  /** Each call with its model's default retention, so expiry is judged against what the provider keeps (gpt-5.6: 30m). */
  private withDefaultRetentions<T extends { readonly model: string }>(
    calls: readonly T[],
  ): (T & { readonly defaultRetention: Retention })[] {
    const catalogue = this.deps.catalogue ?? BUILTIN_PROVIDER_CATALOGUE;
    return calls.map((call) => ({ ...call, defaultRetention: defaultRetentionOf(catalogue, call.model) }));
  }

  /**
   * `prefixctl advise`: the recorded calls of a session, or of every session built in a workspace
   * (each priced on its own calls), priced under each retention with the price book's write prices.
   * Nothing recorded is NOT_FOUND: "no calls" must not read as advice.
   */
  async adviseRetention(
    sessionIdInput: string,
    limitInput: number,
    workspaceInput: string,
    caller: Caller,
  ): Promise<AdviseRetentionResponse> {
    const scope = validateAdviceScope(sessionIdInput, workspaceInput);
    const limit = boundedLimit(limitInput, MAX_ADVISED_CALLS, MAX_ADVISED_CALLS, "limit");
    if ("sessionId" in scope) await this.requireVisible(caller, scope.sessionId);
    else if (isConfined(caller) && !workspaceAllowed(caller.principal, scope.workspace))
      throw new PermissionDeniedError(`workspace: principal ${caller.principal.name} may not use this workspace`, {
        reason: "workspace_not_granted",
        context: { field: "workspace" },
      });
    const calls =
      "sessionId" in scope
        ? await this.deps.store.sessionCalls(scope.sessionId, limit)
        : await this.deps.store.workspaceCalls(
            scope.workspace,
            limit,
            MAX_ADVISED_SESSIONS,
            // A harness is advised on its own tenant's sessions in the workspace, never another's.
            isConfined(caller) ? caller.principal.scope : undefined,
          );
    if (calls.length === 0) {
      const what = "sessionId" in scope ? `session ${scope.sessionId}` : `workspace ${scope.workspace}`;
      throw new NotFoundError(`no calls recorded for ${what}`, {
        reason: "sessionId" in scope ? "session_has_no_calls" : "workspace_has_no_calls",
        context: "sessionId" in scope ? { session_id: scope.sessionId } : { workspace: scope.workspace },
      });
    }
    const catalogue = this.deps.catalogue ?? BUILTIN_PROVIDER_CATALOGUE;
    const advice = adviseRetention(this.withDefaultRetentions(calls), (model) =>
      withRetentionsSold(pricesFor(this.deps.prices, model), catalogue, model),
    );
    return {
      sessionId: "sessionId" in scope ? scope.sessionId : "",
      workspace: "workspace" in scope ? scope.workspace : "",
      sessions: new Set(calls.map((call) => call.sessionId)).size,
      calls: advice.calls,
      currency: this.deps.prices.currency,
      recordedCost: advice.recordedCost,
      retentions: advice.retentions.map((r) => ({ ...r })),
      recommended: advice.cheapest ?? "",
      savingVsDefault: advice.savingVsDefault,
      savingVsNext: advice.savingVsNext,
      defaultRetention: advice.defaultRetention,
    };
  }

  private collapseEvent(sessionId: string, collapse: StoredCollapse, nowMs: number): CacheCollapseEvent {
    return cacheCollapsedEvent({
      eventId: this.deps.newEventId(),
      sessionId,
      occurredAtMs: nowMs,
      collapse: toCacheCollapsed(collapse),
    });
  }

  private logCollapse(sessionId: string, usage: UsageFacts, collapse: StoredCollapse | null): void {
    if (collapse === null) return;
    this.deps.logger.warn(
      {
        session_id: sessionId,
        request_id: usage.requestId,
        prompt_tokens: usage.promptTokens,
        cached_tokens: usage.cachedTokens,
        baseline_ratio: collapse.baselineShare,
        extra_cost: collapse.extraCost,
        changed_sections: collapse.changedSections,
        attribution: collapse.attribution,
        cause_code: collapse.causeCode,
        ...(collapse.causeDisagreement !== "" ? { cause_disagreement: collapse.causeDisagreement } : {}),
      },
      `cache collapse session=${sessionId} cached=${usage.cachedTokens}/${usage.promptTokens} ` +
        `baseline=${(collapse.baselineShare * 100).toFixed(1)}% cost=${collapse.cost.toFixed(4)} ` +
        `extra=${collapse.extraCost.toFixed(4)} changedSections=[${collapse.changedSections.join(",")}] ` +
        `attribution=${collapse.attribution} code=${collapse.causeCode} cause=${JSON.stringify(collapse.cause)}`,
    );
  }
}
