// prompt-assembly's own copy of each session, built from session.events.v1: what the request
// builder needs (messages with their stored local date, deletions, the compaction boundary and
// summary, kind, timezone) and nothing else. Events are applied in batches, one transaction per
// batch: each session's events exactly once, in seq order, with the session's consumer position
// moved in the same transaction, so redelivery is harmless and a crash keeps all or nothing.

import { retryOnDeadlock, translateDbError } from "@prefix-guard/db";
import { InternalError, isPrefixGuardError, NotFoundError, UnavailableError } from "@prefix-guard/errors";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import type { StoredMessage } from "../domain/model";
import {
  type ProjectedEvent,
  type ProjectedSession,
  type ProjectionStep,
  planProjectionStep,
} from "../domain/session-projection";
import { projectedEventFromProto } from "./content-mapping";
import type { ProjectionStore, SessionWrite } from "./ports";
import { PLAINTEXT_ONLY, type SealedEventOpener } from "./sealed-events";

export type ProjectionOutcome = "applied" | "duplicate" | "gap";

/** Port over session-events ReadEvents: events with seq > afterSeq, at most `limit`, and the session's last seq. */
export interface SessionEventsReader {
  readEvents(sessionId: string, afterSeq: number, limit: number): Promise<{ events: SessionEvent[]; lastSeq: number }>;
}

export interface SessionProjectionDeps {
  readonly store: ProjectionStore;
  /** Only stamps updated_at_ms; never part of what a build reads. */
  readonly now: () => number;
  /** ReadEvents page size for catchUp. */
  readonly pageSize?: number;
  /**
   * Told after a batch commits which sessions were removed or re-created: the builder, which owns
   * the prefix fingerprints, forgets theirs.
   */
  readonly onSessionsReset?: (sessionIds: readonly string[]) => Promise<void>;
  /** Opens sealed content (schema 2) before events are applied; default: plaintext events only. */
  readonly opener?: SealedEventOpener;
}

const DEFAULT_PAGE_SIZE = 500;

/** Folds one session's steps of a batch into the rows to write. */
class SessionWriteBuilder {
  private session: ProjectedSession;
  private dropStored = false;
  private flagStored: string[] = [];
  private insert: StoredMessage[] = [];
  private forgetPrefix = false;
  private lastSeq: number;
  private readonly existed: boolean;

  constructor(
    readonly sessionId: string,
    before: ProjectedSession | null,
    position: number,
  ) {
    this.existed = before !== null;
    this.session = before ?? {
      kind: "main",
      timezone: "",
      workspace: "",
      locale: "zh-CN",
      owner: "",
      scope: "",
      generation: 0,
      boundaryMessageId: null,
      summary: null,
      lastSeq: 0,
      deleted: false,
      ended: false,
    };
    this.lastSeq = position;
  }

  add(step: ProjectionStep, seq: number): void {
    this.session = step.session;
    this.lastSeq = seq;
    switch (step.kind) {
      case "reset":
      case "dropMessages":
        this.dropStored = true;
        this.flagStored = [];
        this.insert = [];
        // A re-created id or a removed session must not be compared with its old prefix. A session
        // an operator is rebuilding (its row forgotten first) keeps it: the next build then reports
        // whether the rebuilt projection changed any byte, instead of calling itself a first build.
        this.forgetPrefix ||= step.kind === "dropMessages" || this.existed;
        return;
      case "appendMessage":
        this.insert.push(step.message);
        return;
      case "flagDeleted": {
        const index = this.insert.findIndex((message) => message.messageId === step.messageId);
        const pending = this.insert[index];
        if (pending !== undefined) this.insert[index] = { ...pending, deleted: true };
        else this.flagStored.push(step.messageId);
        return;
      }
      case "updateSession":
        return;
    }
  }

  /** The session was removed or re-created: its old prefix must not be compared with its next build. */
  get resetsPrefix(): boolean {
    return this.forgetPrefix;
  }

  build(): SessionWrite {
    return {
      sessionId: this.sessionId,
      session: this.session,
      dropStored: this.dropStored,
      flagStored: this.flagStored,
      insert: this.insert,
      lastSeq: this.lastSeq,
    };
  }
}

export class SessionProjection {
  private readonly store: ProjectionStore;
  private readonly pageSize: number;
  private readonly opener: SealedEventOpener;

  constructor(private readonly deps: SessionProjectionDeps) {
    this.store = deps.store;
    this.pageSize = deps.pageSize ?? DEFAULT_PAGE_SIZE;
    this.opener = deps.opener ?? PLAINTEXT_ONLY;
  }

  /**
   * Applies a batch of events (any sessions, each session's in seq order) in one transaction.
   * Per event: "applied", "duplicate" (applied before: redelivery) or "gap" (earlier events are
   * missing; nothing of that session from there on is applied, the caller catches up).
   *
   * @throws ValidationError for an event that can never be applied (before SessionCreated, a
   * message without an id), which the consumer routes to the DLQ; nothing of the batch is applied.
   */
  async applyEvents(events: readonly ProjectedEvent[]): Promise<ProjectionOutcome[]> {
    if (events.length === 0) return [];
    const sessionIds = [...new Set(events.map((event) => event.sessionId))];
    const nowMs = this.deps.now();
    try {
      const firstEvents = events.filter((event) => event.seq === 1).map((event) => event.sessionId);
      await this.store.ensurePositions([...new Set(firstEvents)], nowMs);
      // Two writers of one session (the consumer and an operator's rebuild, or two replicas during a
      // rebalance) can deadlock; the transaction was rolled back whole and is simply rerun.
      let reset: string[] = [];
      const outcomes = await retryOnDeadlock(() =>
        this.store.transaction(async (tx) => {
          const positions = await tx.lockPositions(sessionIds);
          const sessions = await tx.readSessions(sessionIds);
          const writes = new Map<string, SessionWriteBuilder>();
          const reached = new Map(positions);
          const state = new Map<string, ProjectedSession | null>(
            sessionIds.map((id) => [id, sessions.get(id) ?? null]),
          );
          const outcomes = events.map((event): ProjectionOutcome => {
            const position = reached.get(event.sessionId) ?? 0;
            if (event.seq <= position) return "duplicate";
            if (event.seq > position + 1) return "gap";
            const step = planProjectionStep(state.get(event.sessionId) ?? null, event);
            let write = writes.get(event.sessionId);
            if (write === undefined) {
              write = new SessionWriteBuilder(event.sessionId, state.get(event.sessionId) ?? null, position);
              writes.set(event.sessionId, write);
            }
            write.add(step, event.seq);
            state.set(event.sessionId, step.session);
            reached.set(event.sessionId, event.seq);
            return "applied";
          });
          await tx.write(
            [...writes.values()].map((write) => write.build()),
            nowMs,
          );
          reset = [...writes.values()].filter((write) => write.resetsPrefix).map((write) => write.sessionId);
          return outcomes;
        }),
      );
      // After the commit: a crash before this leaves an unused fingerprint row of a removed session.
      if (reset.length > 0) await this.deps.onSessionsReset?.(reset);
      return outcomes;
    } catch (error) {
      throw translateDbError(error);
    }
  }

  /** One proto event; see applyEvents. */
  async applySessionEvent(event: SessionEvent): Promise<ProjectionOutcome> {
    const opened = await this.opener.open([event]);
    const [outcome] = await this.applyEvents(opened.map(projectedEventFromProto));
    return outcome ?? "duplicate";
  }

  /**
   * Applies a batch from the topic; every session left with a gap is caught up through
   * ReadEvents (which brings the events of the gap and everything after it). The batch's sealed
   * content is opened first, with one GetDataKeys for all the sessions whose key is not cached.
   */
  async applyOrCatchUp(events: readonly SessionEvent[], reader: SessionEventsReader): Promise<ProjectionOutcome[]> {
    const projected = (await this.opener.open(events)).map(projectedEventFromProto);
    const outcomes = await this.applyEvents(projected);
    const gaps = new Set(
      projected.filter((_event, index) => outcomes[index] === "gap").map((event) => event.sessionId),
    );
    for (const sessionId of gaps) await this.catchUp(sessionId, reader);
    if (gaps.size === 0) return outcomes;
    const positions = new Map<string, number>();
    for (const sessionId of gaps) positions.set(sessionId, await this.projectionSeq(sessionId));
    return outcomes.map((outcome, index) => {
      const event = projected[index] as ProjectedEvent;
      if (outcome !== "gap") return outcome;
      return (positions.get(event.sessionId) ?? 0) >= event.seq ? "applied" : "gap";
    });
  }

  /**
   * Reads the session's events after the projection's position page by page and applies them.
   * Returns the position reached. Safe to run next to the Kafka consumer: both go through the same
   * per-session position, so an event applied by one is a duplicate for the other.
   */
  async catchUp(sessionId: string, reader: SessionEventsReader): Promise<number> {
    let position = await this.projectionSeq(sessionId);
    for (;;) {
      const before = position;
      const page = await readPage(reader, sessionId, position, this.pageSize);
      const fresh = page.events.filter((event) => event.seq > position);
      const events = (await this.opener.open(fresh)).map(projectedEventFromProto);
      for (const event of events) {
        if (event.sessionId !== sessionId) {
          throw new InternalError(`ReadEvents for ${sessionId} returned an event of session ${event.sessionId}`);
        }
      }
      const outcomes = await this.applyEvents(events);
      if (outcomes.includes("gap")) {
        throw new InternalError(`ReadEvents for ${sessionId} skipped a seq after ${position}`, {
          context: { session_id: sessionId },
        });
      }
      position = Math.max(position, await this.projectionSeq(sessionId));
      if (page.events.length === 0 || position >= page.lastSeq) return position;
      if (position === before) {
        throw new InternalError(`ReadEvents for ${sessionId} returned no event after seq ${position}`, {
          context: { session_id: sessionId, last_seq: page.lastSeq },
        });
      }
    }
  }

  /**
   * Operator repair (prefixctl replay): forgets everything projected for the session and reads it
   * again from the event log. The prefix fingerprint is kept, so the next build still reports
   * whether the rebuilt projection changed any byte.
   */
  async rebuildSession(
    sessionId: string,
    reader: SessionEventsReader,
  ): Promise<{ projectionSeq: number; eventsApplied: number }> {
    const before = await this.projectionSeq(sessionId);
    await this.store.forgetSession(sessionId);
    const projectionSeq = await this.catchUp(sessionId, reader);
    if (projectionSeq === 0 && before === 0)
      throw new NotFoundError(`session ${sessionId} has no events`, { reason: "session_not_found" });
    return { projectionSeq, eventsApplied: projectionSeq };
  }

  /** Last seq applied for the session; 0 when none. */
  projectionSeq(sessionId: string): Promise<number> {
    return this.store.position(sessionId);
  }
}

export async function readPage(
  reader: SessionEventsReader,
  sessionId: string,
  afterSeq: number,
  limit: number,
): Promise<{ events: SessionEvent[]; lastSeq: number }> {
  try {
    return await reader.readEvents(sessionId, afterSeq, limit);
  } catch (error) {
    if (isPrefixGuardError(error)) throw error;
    throw new UnavailableError("session-events unavailable", { cause: error, context: { session_id: sessionId } });
  }
}
