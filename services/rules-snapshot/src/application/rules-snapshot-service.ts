import { type ApplyOutcome, withDbTimeout } from "@prefix-guard/db";
import { errorMessage, isPrefixGuardError, ValidationError } from "@prefix-guard/errors";
import type { RulesSnapshotEvent } from "@prefix-guard/proto/events/v1/rules_events";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import {
  Decision,
  type ResolveRequest as ProtoResolveRequest,
  type ResolveResponse as ProtoResolveResponse,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { invalidatedLogLine } from "../domain/log-lines";
import type { Locale, RawRules, ResolutionDecision, RulesEventPayload, SnapshotRow } from "../domain/model";
import { renderWorkspaceRulesSection } from "../domain/render-rules-section";
import { afterOperatorRefresh, decideResolution, type ResolutionPlan } from "../domain/resolve-decision";
import { planSessionEventCleanup } from "../domain/session-cleanup";
import { invalidatedPayload, RULES_EVENT_SCHEMA_VERSION, rulesEventType } from "../domain/snapshot-events";
import {
  type RulesSource,
  requireGeneration,
  requireKnownRulesHash,
  requireLocale,
  requireSessionId,
  requireSource,
  requireWorkspace,
} from "../domain/validation";
import type { AgentsMdRead, RulesFileReader, SnapshotStore, SnapshotTransaction } from "./ports";
import { ReadGroups } from "./read-groups";

/** Consumer name in `consumer_position`. */
const RULES_SNAPSHOT_CONSUMER = "rules-snapshot";

/**
 * Where rules.snapshot.v1 events go. `tx` is the transaction that made the change, so an outbox
 * implementation commits the event with it; an implementation without a DB may ignore it.
 */
export interface RulesEventSink {
  record(event: RulesSnapshotEvent, tx?: SnapshotTransaction): Promise<void>;
}

/** The part of a pino logger the service uses. */
export interface RulesSnapshotLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface RulesSnapshotServiceDeps {
  readonly store: SnapshotStore;
  /**
   * Reads a file source named for a workspace, confined to it (adapters/fs `cachedAgentsMdReader`):
   * a refused path throws a ValidationError, a missing file is an empty read.
   */
  readonly readFile: RulesFileReader;
  /** Lower-case hex sha256 of the UTF-8 text. */
  readonly sha256: (text: string) => string;
  readonly now: () => number;
  readonly newEventId: () => string;
  readonly events: RulesEventSink;
  readonly logger: RulesSnapshotLogger;
  /** Bound on the DB part of one call, connection acquisition included. */
  readonly dbTimeoutMs: number;
  /** Language of the section heading and notice; defaults to zh-CN, the seed's wording. */
  readonly locale?: Locale;
  /**
   * Told after a transaction that recorded an event has committed (the relay's wake-up). Never told
   * for a call that wrote none: a retained Resolve, every turn but the first, would otherwise cost
   * the relay's lock check and outbox read on each build.
   */
  readonly eventsCommitted?: () => void;
}

export type ResolveRequest = Pick<
  ProtoResolveRequest,
  "sessionId" | "workspace" | "source" | "compactionGeneration" | "embed" | "locale" | "cacheCold"
> &
  Partial<Pick<ProtoResolveRequest, "knownRulesHash">>;

export type ResolveResponse = Omit<ProtoResolveResponse, "_unknownFields">;

export type SessionEventOutcome =
  | { readonly kind: "ignored" }
  | { readonly kind: "applied"; readonly removed: boolean }
  | Exclude<ApplyOutcome, { kind: "applied" }>;

const PROTO_DECISIONS: Record<ResolutionDecision, Decision> = {
  PINNED: Decision.DECISION_PINNED,
  RETAINED: Decision.DECISION_RETAINED,
  RETAINED_DISK_CHANGED: Decision.DECISION_RETAINED_DISK_CHANGED,
  RETAINED_DISK_EMPTY: Decision.DECISION_RETAINED_DISK_EMPTY,
  REPINNED_WORKSPACE_MISMATCH: Decision.DECISION_REPINNED_WORKSPACE_MISMATCH,
  REPINNED_STALE_GENERATION: Decision.DECISION_REPINNED_STALE_GENERATION,
  EMPTY_NOT_PINNED: Decision.DECISION_EMPTY_NOT_PINNED,
  DEGRADED_RAW: Decision.DECISION_DEGRADED_RAW,
  SKIPPED_EMBED: Decision.DECISION_SKIPPED_EMBED,
  REPINNED_OPERATOR_REFRESH: Decision.DECISION_REPINNED_OPERATOR_REFRESH,
  REPINNED_COLD_CACHE: Decision.DECISION_REPINNED_COLD_CACHE,
};

/** Sessions per grouped snapshot read: one IN list, far below any statement size limit. */
const MAX_SNAPSHOT_READ_GROUP = 256;

const NO_RAW: RawRules = { sectionText: "", sourcePath: null, sourceMtimeMs: null, rawHash: "" };

/**
 * Seed 001: per-session frozen "workspace rules" section. Resolve never fails for DB trouble: it
 * degrades to the rules read now (§7 "数据库不可用"); invalidate / get / the consumer propagate DB
 * errors (typed, via translateDbError) so their callers can retry (§6 实现口径).
 */
/** Our typed errors say what failed without data; a raw driver message can quote SQL and the rules. */
function safeReason(error: unknown): string {
  if (isPrefixGuardError(error)) return error.message;
  if (error instanceof Error && "code" in error && typeof error.code === "string") return error.code;
  return error instanceof Error ? error.name : "error";
}

export class RulesSnapshotService {
  private readonly locale: Locale;
  /**
   * The rendered section and its hash per read and locale: a cached reader answers the same object
   * for an unchanged file.
   */
  private readonly rendered = new WeakMap<AgentsMdRead, Map<Locale, RawRules>>();
  /**
   * Resolve's two reads, grouped across concurrent calls (read-groups.ts): the snapshot rows in one
   * query, and each rules file checked once for every call waiting on it. Under load each call
   * otherwise paid a database round trip and three file-system round trips of its own.
   */
  private readonly snapshotReads: ReadGroups<string, SnapshotRow, null>;
  private readonly fileReads: ReadGroups<string, AgentsMdRead>;

  constructor(private readonly deps: RulesSnapshotServiceDeps) {
    this.locale = deps.locale ?? "zh-CN";
    this.snapshotReads = new ReadGroups(
      (sessionIds) => deps.store.findBySessions(sessionIds),
      () => null,
      MAX_SNAPSHOT_READ_GROUP,
    );
    // Keyed by path and workspace together (the confinement depends on both), one file per lane.
    this.fileReads = new ReadGroups(
      async (keys) => {
        const reads = new Map<string, AgentsMdRead>();
        for (const key of keys) {
          const [path, workspace] = JSON.parse(key) as [string, string];
          reads.set(key, await deps.readFile(path, workspace));
        }
        return reads;
      },
      (key) => key,
      1,
    );
  }

  async resolveWorkspaceRules(request: ResolveRequest): Promise<ResolveResponse> {
    const knownHash = requireKnownRulesHash(request.knownRulesHash ?? "");
    const response = await this.resolveSection(request);
    // The caller holds this very section: the answer names it by its hash instead of resending it.
    if (knownHash === "" || response.rulesHash !== knownHash) return response;
    return { ...response, sectionText: "", sectionTextOmitted: true };
  }

  private async resolveSection(request: ResolveRequest): Promise<ResolveResponse> {
    const sessionId = requireSessionId(request.sessionId);
    const callerGeneration = requireGeneration(request.compactionGeneration);
    if (request.embed) {
      const plan = decideResolution({
        sessionId,
        existing: null,
        workspace: request.workspace,
        raw: NO_RAW,
        callerGeneration,
        embed: true,
        cacheCold: false,
      });
      return this.responseFromPlan(plan);
    }
    const workspace = requireWorkspace(request.workspace);
    const source = requireSource(request.source);
    const locale = requireLocale(request.locale, this.locale);
    // The snapshot row and the rules file are read at the same time: on a retained session (every
    // turn but the first) they are the whole of Resolve's latency, and neither depends on the other.
    const storedRead = this.snapshotReads.read(sessionId).then((row) => row ?? null);
    // Awaited once the file is read; a bad request may never await it, and its failure must not
    // count as unhandled meanwhile.
    storedRead.catch(() => undefined);
    const { raw, unreadable } = await this.readRaw(sessionId, workspace, source, locale);
    let response: ResolveResponse;
    try {
      response = await withDbTimeout(
        this.resolveAgainstStore(sessionId, workspace, raw, callerGeneration, request.cacheCold === true, storedRead),
        this.deps.dbTimeoutMs,
        "workspace rules resolve",
      );
    } catch (error) {
      return this.degraded(sessionId, raw, error);
    }
    if (unreadable === null || response.warning !== "") return response;
    // A path read where rules-snapshot runs, not where the harness does (a container without the
    // workspace mounted): say so on every answer instead of a silent "no rules".
    return {
      ...response,
      warning: `rules_file ${source.$case === "file" ? source.value.path : ""} cannot be read where rules-snapshot runs (${unreadable}): no rules were read from it; mount the workspace into rules-snapshot or send rules_content`,
    };
  }

  /** Drops the session's snapshot so the next resolve pins what is read then. */
  async invalidate(sessionId: string, reason: string): Promise<{ removed: boolean }> {
    requireSessionId(sessionId);
    const why = reason.trim().length > 0 ? reason.trim() : "operator";
    const { store } = this.deps;
    const removedRow = await withDbTimeout(
      store.transaction(async (tx) => {
        const row = await store.findBySession(sessionId, tx);
        if (row === null) return null;
        if ((await store.deleteBySession(sessionId, tx)) === 0) return null;
        await store.rememberRefresh(sessionId, why, this.deps.now(), tx);
        await this.recordEvent(sessionId, invalidatedPayload(why, row.generation), tx);
        return row;
      }),
      this.deps.dbTimeoutMs,
      "workspace rules invalidate",
    );
    if (removedRow !== null) this.deps.logger.info({ sessionId, reason: why }, invalidatedLogLine(sessionId, why));
    return { removed: removedRow !== null };
  }

  async getSnapshot(sessionId: string): Promise<SnapshotRow | null> {
    requireSessionId(sessionId);
    return withDbTimeout(this.deps.store.findBySession(sessionId), this.deps.dbTimeoutMs, "workspace rules get");
  }

  /**
   * Applies one session.events.v1 event: cleanup only (CompactionCommitted, SessionDeleted,
   * SideTaskPromoted). The delete and the consumer position commit together; a redelivery is a
   * duplicate, and a gap is applied anyway because a delete does not depend on earlier events.
   */
  async applySessionEvent(event: SessionEvent): Promise<SessionEventOutcome> {
    const cleanup = planSessionEventCleanup(event);
    if (cleanup === null) return { kind: "ignored" };
    const { store } = this.deps;
    let removed = false;
    const outcome = await withDbTimeout(
      store.applyInSessionOrder(
        {
          consumer: RULES_SNAPSHOT_CONSUMER,
          sessionId: event.sessionId,
          seq: event.seq,
          nowMs: this.deps.now(),
          applyAcrossGap: true,
        },
        async (tx) => {
          const count =
            cleanup.belowGeneration === null
              ? await store.deleteBySession(event.sessionId, tx)
              : await store.deleteOlderThanGeneration(event.sessionId, cleanup.belowGeneration, tx);
          // A deleted or promoted session is never pinned again: its pending refresh goes with it.
          if (cleanup.belowGeneration === null) await store.forgetRefresh(event.sessionId, tx);
          removed = count > 0;
          if (removed) await this.recordEvent(event.sessionId, cleanup.event, tx);
        },
      ),
      this.deps.dbTimeoutMs,
      "workspace rules session event",
    );
    if (outcome.kind !== "applied") return outcome;
    if (removed) this.deps.logger.info({ sessionId: event.sessionId, seq: event.seq }, cleanup.logLine);
    return { kind: "applied", removed };
  }

  /** The rules as read now, and why nothing could be read when the file is missing or unreadable. */
  private async readRaw(
    sessionId: string,
    workspace: string,
    source: RulesSource,
    locale: Locale,
  ): Promise<{ raw: RawRules; unreadable: string | null }> {
    if (source.$case === "content")
      return { raw: this.render(source.value.text, null, null, false, locale), unreadable: null };
    const sourcePath = source.value.path;
    try {
      const read = await this.readFileGrouped(sourcePath, workspace);
      const unreadable = read.missing ?? null;
      let byLocale = this.rendered.get(read);
      if (byLocale === undefined) {
        byLocale = new Map();
        this.rendered.set(read, byLocale);
      }
      const known = byLocale.get(locale);
      if (known !== undefined) return { raw: known, unreadable };
      const raw = this.render(read.text, sourcePath, read.mtimeMs, read.truncated, locale);
      byLocale.set(locale, raw);
      return { raw, unreadable };
    } catch (error) {
      // A refused path (outside the confinement, not a regular file) fails the call and pins nothing.
      if (error instanceof ValidationError) throw error;
      // An unreadable file must not block the conversation: it reads as empty, which keeps a pinned
      // snapshot (§3.4) and injects nothing for a session without one, as a missing file would.
      // The OS error is not repeated, in the log or the answer: its code and text tell a caller
      // what exists and what is protected.
      this.deps.logger.warn(
        { sessionId, path: sourcePath },
        `workspace rules source unreadable, treated as empty session=${sessionId} path=${sourcePath}`,
      );
      return { raw: this.render("", sourcePath, null, false, locale), unreadable: "not readable" };
    }
  }

  private async readFileGrouped(path: string, workspace: string): Promise<AgentsMdRead> {
    const read = await this.fileReads.read(JSON.stringify([path, workspace]));
    if (read === undefined) throw new Error("rules file read answered nothing");
    return read;
  }

  private render(
    text: string,
    sourcePath: string | null,
    sourceMtimeMs: number | null,
    sourceTruncated: boolean,
    locale: Locale,
  ): RawRules {
    const sectionText = renderWorkspaceRulesSection(text, locale, { sourceTruncated });
    return { sectionText, sourcePath, sourceMtimeMs, rawHash: this.deps.sha256(sectionText) };
  }

  private async resolveAgainstStore(
    sessionId: string,
    workspace: string,
    raw: RawRules,
    callerGeneration: number,
    cacheCold: boolean,
    storedRead: Promise<SnapshotRow | null>,
  ): Promise<ResolveResponse> {
    const { store } = this.deps;
    const existing = await storedRead;
    let plan = decideResolution({ sessionId, existing, workspace, raw, callerGeneration, embed: false, cacheCold });
    const action = plan.action;
    switch (action.kind) {
      case "none":
        return this.responseFromPlan(plan);
      case "insert":
      case "overwrite": {
        const nowMs = this.deps.now();
        let pinned = plan;
        await store.transaction(async (tx) => {
          pinned = afterOperatorRefresh(plan, await store.takeRefresh(sessionId, tx));
          await store.upsert(action.snapshot, nowMs, tx);
          if (pinned.event !== null) await this.recordEvent(sessionId, pinned.event, tx);
        });
        plan = pinned;
        this.logPlan(sessionId, plan);
        // Concurrent first resolves each upsert; the row left is the last one committed. Answer with
        // it, so every caller injects what later rounds will retain.
        const stored = await store.findBySession(sessionId);
        if (stored === null) return this.responseFromPlan(plan);
        return {
          ...this.responseFromPlan(plan),
          sectionText: stored.rulesText,
          rulesHash: stored.rulesHash,
          pinnedGeneration: stored.generation,
        };
      }
      case "delete": {
        const removed = await store.transaction(async (tx) => {
          const count =
            action.belowGeneration === null
              ? await store.deleteBySession(sessionId, tx)
              : await store.deleteOlderThanGeneration(sessionId, action.belowGeneration, tx);
          if (count > 0 && plan.event !== null) await this.recordEvent(sessionId, plan.event, tx);
          return count > 0;
        });
        if (removed) this.logPlan(sessionId, plan);
        return this.responseFromPlan(plan);
      }
      case "markReported": {
        const marked = await store.transaction(async (tx) => {
          const won = await store.markReported(sessionId, action.diskHash, action.pinnedHash, this.deps.now(), tx);
          if (won && plan.event !== null) await this.recordEvent(sessionId, plan.event, tx);
          return won;
        });
        if (marked) this.logPlan(sessionId, plan);
        return this.responseFromPlan(plan);
      }
    }
  }

  private degraded(sessionId: string, raw: RawRules, error: unknown): ResolveResponse {
    // The caller sees a short reason; the driver's message (which can quote SQL and the rules) is logged only.
    const warning = `rules snapshot store unavailable (${safeReason(error)}), injected the rules as read now`;
    this.deps.logger.warn(
      { sessionId, err: errorMessage(error) },
      `workspace rules snapshot degraded to raw rules session=${sessionId}: ${errorMessage(error)}`,
    );
    return {
      sectionText: raw.sectionText,
      decision: PROTO_DECISIONS.DEGRADED_RAW,
      rulesHash: raw.sectionText.length > 0 ? raw.rawHash : "",
      pinnedGeneration: 0,
      warning,
      refreshReason: "",
    };
  }

  private responseFromPlan(plan: ResolutionPlan): ResolveResponse {
    return {
      sectionText: plan.sectionText,
      decision: PROTO_DECISIONS[plan.decision],
      rulesHash: plan.rulesHash,
      pinnedGeneration: plan.pinnedGeneration,
      warning: "",
      refreshReason: plan.refreshReason,
    };
  }

  private logPlan(sessionId: string, plan: ResolutionPlan): void {
    for (const line of plan.logLines) this.deps.logger.info({ sessionId, decision: plan.decision }, line);
  }

  private async recordEvent(sessionId: string, payload: RulesEventPayload, tx: SnapshotTransaction): Promise<void> {
    const event: RulesSnapshotEvent = {
      eventId: this.deps.newEventId(),
      sessionId,
      occurredAtMs: this.deps.now(),
      schemaVersion: RULES_EVENT_SCHEMA_VERSION,
      type: rulesEventType(payload),
      payload,
    };
    await this.deps.events.record(event, tx);
    // Told here, where every event is recorded, once its transaction has committed (never after a
    // rollback): no call site has to restate when it wrote one.
    const { eventsCommitted } = this.deps;
    if (eventsCommitted !== undefined) this.deps.store.afterCommit(tx, eventsCommitted);
  }
}
