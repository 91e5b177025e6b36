// prompt-assembly's own copy of each session, built from session.events.v1: what the request
// builder needs (messages with their stored local date, deletions, the compaction boundary and
// summary, kind, timezone) and nothing else. Every event is applied exactly once per session, in
// seq order, in the same transaction as the consumer position (applyInSessionOrder), so redelivery
// is harmless and a crash keeps both or neither.

import { applyInSessionOrder, type Database, readConsumerPosition, translateDbError } from "@prefix-guard/db";
import {
  ConflictError,
  FailedPreconditionError,
  InternalError,
  isPrefixGuardError,
  NotFoundError,
  UnavailableError,
  ValidationError,
} from "@prefix-guard/errors";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import type { Knex } from "knex";
import type { SessionView, StoredMessage } from "../domain/model";
import {
  contentFromProto,
  kindFromProto,
  parseStoredContent,
  roleFromProto,
  storedContentJson,
  storedRole,
} from "./content-mapping";

/** Name of this projection in consumer_position. */
export const PROJECTION_CONSUMER = "prompt-assembly";

/** session-events' CreateSession default; used only when an event carries no zone at all. */
export const DEFAULT_SESSION_TIMEZONE = "Asia/Shanghai";

const DEFAULT_PAGE_SIZE = 500;

/** Port over session-events ReadEvents: events with seq > afterSeq, at most `limit`, and the session's last seq. */
export interface SessionEventsReader {
  readEvents(sessionId: string, afterSeq: number, limit: number): Promise<{ events: SessionEvent[]; lastSeq: number }>;
}

/** The domain's SessionView plus the session's zone, which "today" is taken in (seed 000 §5.1). */
export interface ProjectedSessionView extends SessionView {
  readonly timezone: string;
}

export type ProjectionOutcome = "applied" | "duplicate" | "gap";

export interface SessionProjectionDeps {
  readonly db: Database;
  /** Only stamps updated_at_ms; never part of what a build reads. */
  readonly now: () => number;
  /** ReadEvents page size for catchUp. */
  readonly pageSize?: number;
}

interface SessionRow {
  session_id: string;
  kind: string;
  timezone: string;
  generation: number | string;
  boundary_message_id: string | null;
  summary: string | null;
  last_seq: number | string;
  deleted: number | boolean;
  ended: number | boolean;
}

interface MessageRow {
  message_id: string;
  seq: number | string;
  role: string;
  content_json: string;
  local_date: string;
  created_at_ms: number | string;
  deleted: number | boolean;
}

function flag(value: number | boolean | string): boolean {
  return value === true || Number(value) === 1;
}

function nonEmptyOrNull(text: string): string | null {
  return text.length > 0 ? text : null;
}

const SESSION_KINDS: ReadonlySet<string> = new Set(["main", "side", "embed"]);

export class SessionProjection {
  private readonly db: Database;
  private readonly now: () => number;
  private readonly pageSize: number;

  constructor(deps: SessionProjectionDeps) {
    this.db = deps.db;
    this.now = deps.now;
    this.pageSize = deps.pageSize ?? DEFAULT_PAGE_SIZE;
  }

  /**
   * Applies one event. "duplicate" means it was applied before (redelivery); "gap" means earlier
   * events are missing and nothing was applied: the caller catches up (catchUp / applyOrCatchUp).
   *
   * @throws ValidationError for an event that can never be applied (no payload, unknown role ...),
   * which the Kafka consumer routes to the DLQ.
   */
  async applySessionEvent(event: SessionEvent): Promise<ProjectionOutcome> {
    assertApplicable(event);
    try {
      if (event.seq === 1) await this.ensurePositionRow(event.sessionId);
      const outcome = await applyInSessionOrder(
        this.db,
        { consumer: PROJECTION_CONSUMER, sessionId: event.sessionId, seq: event.seq, nowMs: this.now() },
        (trx) => this.applyPayload(trx, event),
      );
      return outcome.kind;
    } catch (error) {
      throw translateDbError(error, { session_id: event.sessionId, seq: event.seq });
    }
  }

  /** applySessionEvent, and on a gap reads the missing events (this one included) from session-events. */
  async applyOrCatchUp(event: SessionEvent, reader: SessionEventsReader): Promise<ProjectionOutcome> {
    const outcome = await this.applySessionEvent(event);
    if (outcome !== "gap") return outcome;
    await this.catchUp(event.sessionId, reader);
    return (await this.projectionSeq(event.sessionId)) >= event.seq ? "applied" : "gap";
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
      for (const event of page.events) {
        if (event.sessionId !== sessionId) {
          throw new InternalError(`ReadEvents for ${sessionId} returned an event of session ${event.sessionId}`);
        }
        if (event.seq <= position) continue;
        const outcome = await this.applyRacingConsumer(event);
        if (outcome === "gap") {
          throw new InternalError(`ReadEvents for ${sessionId} skipped from seq ${position} to ${event.seq}`, {
            context: { session_id: sessionId },
          });
        }
        position = Math.max(position, event.seq);
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
    try {
      await this.db.transaction(async (trx) => {
        await trx("pa_message").where({ session_id: sessionId }).delete();
        await trx("pa_session").where({ session_id: sessionId }).delete();
        await trx("consumer_position").where({ consumer: PROJECTION_CONSUMER, session_id: sessionId }).delete();
      });
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
    const projectionSeq = await this.catchUp(sessionId, reader);
    if (projectionSeq === 0 && before === 0)
      throw new NotFoundError(`session ${sessionId} has no events`, { reason: "session_not_found" });
    return { projectionSeq, eventsApplied: projectionSeq };
  }

  /** Last seq applied for the session; 0 when none. */
  async projectionSeq(sessionId: string): Promise<number> {
    try {
      return await readConsumerPosition(this.db, PROJECTION_CONSUMER, sessionId);
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }

  /**
   * The session as the builder sees it, read in one transaction so messages and session row come
   * from the same moment.
   *
   * @throws NotFoundError for an unknown or deleted session; FailedPreconditionError for an ended
   * (promoted) side task, whose state is dropped.
   */
  async loadSessionView(sessionId: string): Promise<ProjectedSessionView> {
    let loaded: { session: SessionRow | undefined; messages: MessageRow[] };
    try {
      loaded = await this.db.transaction(async (trx) => {
        const session = (await trx("pa_session").where({ session_id: sessionId }).first()) as SessionRow | undefined;
        if (session === undefined || flag(session.deleted) || flag(session.ended)) return { session, messages: [] };
        const messages = (await trx("pa_message")
          .where({ session_id: sessionId })
          .orderBy("seq", "asc")
          .select(
            "message_id",
            "seq",
            "role",
            "content_json",
            "local_date",
            "created_at_ms",
            "deleted",
          )) as MessageRow[];
        return { session, messages };
      });
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
    const { session, messages } = loaded;
    if (session === undefined) {
      throw new NotFoundError(`session ${sessionId} is not known to prompt-assembly`, {
        reason: "session_not_found",
        context: { session_id: sessionId },
      });
    }
    if (flag(session.deleted)) {
      throw new NotFoundError(`session ${sessionId} is deleted`, {
        reason: "session_deleted",
        context: { session_id: sessionId },
      });
    }
    if (flag(session.ended)) {
      throw new FailedPreconditionError(`session ${sessionId} is an ended side task (promoted)`, {
        reason: "session_ended",
        context: { session_id: sessionId },
      });
    }
    if (!SESSION_KINDS.has(session.kind)) throw new InternalError(`stored session kind ${session.kind} is unknown`);
    return {
      sessionId,
      kind: session.kind as SessionView["kind"],
      timezone: session.timezone,
      generation: Number(session.generation),
      boundaryMessageId: session.boundary_message_id,
      summary: session.summary,
      lastSeq: Number(session.last_seq),
      messages: messages.map(
        (row): StoredMessage => ({
          messageId: row.message_id,
          seq: Number(row.seq),
          role: storedRole(row.role),
          content: parseStoredContent(row.content_json, `pa_message[${sessionId}/${row.message_id}].content`),
          localDate: row.local_date,
          createdAtMs: Number(row.created_at_ms),
          deleted: flag(row.deleted),
        }),
      ),
    };
  }

  // applyInSessionOrder locks the position row FOR UPDATE; while it does not exist InnoDB takes
  // only a gap lock, and two writers applying seq 1 (the consumer and a catch-up) then deadlock on
  // their inserts. Position 0 as a real row gives them a record lock to queue on. Only seq 1 can
  // meet a missing row: any later seq without one is a gap and writes nothing.
  private async ensurePositionRow(sessionId: string): Promise<void> {
    await this.db("consumer_position")
      .insert({ consumer: PROJECTION_CONSUMER, session_id: sessionId, last_seq: 0, updated_at_ms: this.now() })
      .onConflict(["consumer", "session_id"])
      .ignore();
  }

  // Two writers (the Kafka consumer and a catch-up) can both insert the first consumer_position
  // row of a session; the loser sees a unique violation, and on retry the event is a duplicate.
  private async applyRacingConsumer(event: SessionEvent): Promise<ProjectionOutcome> {
    try {
      return await this.applySessionEvent(event);
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
      return this.applySessionEvent(event);
    }
  }

  private async applyPayload(trx: Knex.Transaction, event: SessionEvent): Promise<void> {
    const payload = event.payload;
    if (payload === undefined) return;
    const sessionId = event.sessionId;
    const nowMs = this.now();
    if (payload.$case === "sessionCreated") {
      const created = payload.value;
      const row = {
        kind: kindFromProto(created.kind, "session_created.kind"),
        timezone: created.timezone.length > 0 ? created.timezone : DEFAULT_SESSION_TIMEZONE,
        generation: 0,
        boundary_message_id: null,
        summary: nonEmptyOrNull(created.inheritedSummary.trim()),
        last_seq: event.seq,
        deleted: false,
        ended: false,
        updated_at_ms: nowMs,
      };
      // Position 0 → applying seq 1: anything already stored for the id is left over from an
      // earlier projection of it and is replaced, not merged.
      await trx("pa_message").where({ session_id: sessionId }).delete();
      await trx("pa_prefix_fingerprint").where({ session_id: sessionId }).delete();
      const updated = await trx("pa_session").where({ session_id: sessionId }).update(row);
      if (updated === 0) await trx("pa_session").insert({ session_id: sessionId, ...row });
      return;
    }

    const session = (await trx("pa_session").where({ session_id: sessionId }).first("deleted", "ended")) as
      | Pick<SessionRow, "deleted" | "ended">
      | undefined;
    if (session === undefined) {
      throw new ValidationError("session_id", `${event.type} at seq ${event.seq} precedes SessionCreated`, {
        reason: "session_not_created",
      });
    }
    const touch = { last_seq: event.seq, updated_at_ms: nowMs };
    // A deleted or ended session keeps only its tombstone; later events just move the position.
    if (flag(session.deleted) || flag(session.ended)) {
      await trx("pa_session").where({ session_id: sessionId }).update(touch);
      return;
    }

    switch (payload.$case) {
      case "messageSaved": {
        const saved = payload.value;
        if (saved.messageId.length === 0) throw new ValidationError("message_saved.message_id", "must not be empty");
        const content = contentFromProto(saved.content, "message_saved.content");
        await trx("pa_message").insert({
          session_id: sessionId,
          message_id: saved.messageId,
          seq: event.seq,
          role: roleFromProto(saved.role, "message_saved.role"),
          content_json: storedContentJson(content),
          local_date: saved.localDate,
          created_at_ms: event.occurredAtMs,
          deleted: false,
        });
        break;
      }
      case "messageDeleted":
        await trx("pa_message")
          .where({ session_id: sessionId, message_id: payload.value.messageId })
          .update({ deleted: true });
        break;
      case "compactionCommitted": {
        const compaction = payload.value;
        await trx("pa_session")
          .where({ session_id: sessionId })
          .update({
            generation: compaction.generation,
            boundary_message_id: nonEmptyOrNull(compaction.boundaryMessageId),
            summary: nonEmptyOrNull(compaction.summary.trim()),
          });
        break;
      }
      case "sessionDeleted":
        await this.dropState(trx, sessionId);
        await trx("pa_session").where({ session_id: sessionId }).update({ deleted: true });
        break;
      case "sideTaskPromoted":
        await this.dropState(trx, sessionId);
        await trx("pa_session").where({ session_id: sessionId }).update({ ended: true });
        break;
    }
    await trx("pa_session").where({ session_id: sessionId }).update(touch);
  }

  private async dropState(trx: Knex.Transaction, sessionId: string): Promise<void> {
    await trx("pa_message").where({ session_id: sessionId }).delete();
    await trx("pa_prefix_fingerprint").where({ session_id: sessionId }).delete();
  }
}

function assertApplicable(event: SessionEvent): void {
  if (event.sessionId.length === 0) throw new ValidationError("session_id", "must not be empty");
  if (event.sessionId.length > 128) throw new ValidationError("session_id", "must be at most 128 characters");
  if (!Number.isSafeInteger(event.seq) || event.seq < 1) throw new ValidationError("seq", "must be >= 1");
  if (event.payload === undefined) throw new ValidationError("payload", "event has no payload");
}

async function readPage(
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
