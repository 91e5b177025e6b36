import { isUniqueViolation, translateDbError, withSql } from "@prefix-guard/db";
import { AlreadyExistsError, ConflictError, NotFoundError } from "@prefix-guard/errors";
import {
  decodeSessionEvent,
  encodeSessionEvent,
  SESSION_EVENT_SCHEMA_VERSION,
  type SessionEventPayload,
  sessionEventType,
} from "@prefix-guard/events";
import { Role } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import type {
  CommitCompactionRequest,
  CommitCompactionResponse,
  CreateSessionRequest,
  CreateSessionResponse,
  DeleteMessageRequest,
  DeleteSessionRequest,
  GetSessionRequest,
  ListMessagesRequest,
  ListMessagesResponse,
  PromoteSideTaskRequest,
  ReadEventsRequest,
  ReadEventsResponse,
  SaveMessageRequest,
  SaveMessageResponse,
  Session,
  StoredMessage,
  WriteResponse,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import type { Knex } from "knex";
import { appendMessage } from "../adapters/mysql/message-append";
import {
  checkExpectedSeq,
  decideCompaction,
  decideInheritance,
  decideMessageCapacity,
  requireDeletableMessage,
  requireLiveSession,
  requireParentSession,
  requirePromotableSideTask,
  requireWritableSession,
} from "../domain/decisions";
import { DEFAULT_SESSION_LIMITS, type SessionLimits } from "../domain/limits";
import { localDateOf } from "../domain/local-date";
import {
  kindFromName,
  type MessageState,
  roleFromName,
  type SessionKindName,
  type SessionState,
} from "../domain/model";
import { parseStoredContent, storedContentJson } from "../domain/stored-content";
import { extractPersonalTerms, scrubSummary } from "../domain/summary-scrub";
import {
  validateCommitCompaction,
  validateCreateSession,
  validateDeleteMessage,
  validateDeleteSession,
  validateGetSession,
  validateListMessages,
  validatePromoteSideTask,
  validateReadEvents,
  validateSaveMessage,
} from "../domain/validation";

export interface SessionCommandsDeps {
  readonly db: Knex;
  readonly now: () => number;
  /** Envelope ids (UUIDv7-like, e.g. `() => newEventId(now())`). */
  readonly newEventId: () => string;
  /** Session ids (when the caller chose none) and message ids; must match the safe id charset. */
  readonly newId: () => string;
  /** W3C traceparent of the active span, stored on the event row for the relay. */
  readonly traceparent: () => string | undefined;
  readonly limits?: Partial<SessionLimits>;
}

interface SessionRow {
  session_id: string;
  owner: string;
  workspace: string;
  timezone: string;
  kind: string;
  parent_session_id: string | null;
  last_seq: number | string;
  compaction_generation: number | string;
  compaction_boundary_message_id: string | null;
  summary: string;
  inherited_summary_from: string | null;
  content_chars: number | string;
  serialized_bytes: number | string;
  created_at_ms: number | string;
  deleted: number | boolean;
  ended: number | boolean;
  locale: string;
}

interface MessageRow {
  message_id: string;
  session_id: string;
  seq: number | string;
  role: string;
  content_json: string;
  thinking_chars: number | string;
  content_chars: number | string;
  created_at_ms: number | string;
  local_date: string;
  deleted: number | boolean;
}

const MESSAGE_COLUMNS = [
  "message_id",
  "session_id",
  "seq",
  "role",
  "content_json",
  "thinking_chars",
  "content_chars",
  "created_at_ms",
  "local_date",
  "deleted",
] as const;

type Queryable = Knex | Knex.Transaction;

/** MariaDB deadlock (1213) and lock-wait timeout (1205): the transaction was rolled back and may simply be rerun. */
function isLockFailure(error: unknown): boolean {
  const errno = typeof error === "object" && error !== null ? (error as { errno?: unknown }).errno : undefined;
  return errno === 1213 || errno === 1205;
}

function flag(value: number | boolean): boolean {
  return value === true || Number(value) === 1;
}

function toSessionState(row: SessionRow): SessionState {
  return {
    sessionId: row.session_id,
    owner: row.owner,
    kind: row.kind as SessionKindName,
    parentSessionId: row.parent_session_id ?? undefined,
    timezone: row.timezone,
    lastSeq: Number(row.last_seq),
    compactionGeneration: Number(row.compaction_generation),
    compactionBoundaryMessageId: row.compaction_boundary_message_id ?? undefined,
    summary: row.summary,
    contentChars: Number(row.content_chars),
    serializedBytes: Number(row.serialized_bytes),
    deleted: flag(row.deleted),
    ended: flag(row.ended),
  };
}

function toSession(row: SessionRow): Session {
  return {
    sessionId: row.session_id,
    owner: row.owner,
    workspace: row.workspace,
    timezone: row.timezone,
    kind: kindFromName(row.kind),
    parentSessionId: row.parent_session_id ?? "",
    lastSeq: Number(row.last_seq),
    compactionGeneration: Number(row.compaction_generation),
    compactionBoundaryMessageId: row.compaction_boundary_message_id ?? "",
    summary: row.summary,
    inheritedSummaryFrom: row.inherited_summary_from ?? "",
    contentChars: Number(row.content_chars),
    serializedBytes: Number(row.serialized_bytes),
    createdAtMs: Number(row.created_at_ms),
    deleted: flag(row.deleted),
    ended: flag(row.ended),
    locale: row.locale,
  };
}

function toMessageState(row: MessageRow): MessageState {
  return {
    messageId: row.message_id,
    sessionId: row.session_id,
    seq: Number(row.seq),
    contentChars: Number(row.content_chars),
    deleted: flag(row.deleted),
  };
}

function toStoredMessage(row: MessageRow): StoredMessage {
  return {
    messageId: row.message_id,
    seq: Number(row.seq),
    role: roleFromName(row.role),
    content: parseStoredContent(row.content_json),
    thinkingChars: Number(row.thinking_chars),
    createdAtMs: Number(row.created_at_ms),
    localDate: row.local_date,
    deleted: flag(row.deleted),
  };
}

function payloadBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new Error("session_event.payload is not binary");
}

/**
 * The write side of session-events. Every write is one transaction: read (and on MySQL lock) the
 * session row, decide, append exactly one event at last_seq + 1, update the projections. The event
 * row is also the outbox entry the relay publishes.
 */
export class SessionCommands {
  private readonly db: Knex;
  private readonly limits: SessionLimits;

  constructor(private readonly deps: SessionCommandsDeps) {
    this.db = deps.db;
    this.limits = { ...DEFAULT_SESSION_LIMITS, ...deps.limits };
  }

  async createSession(request: CreateSessionRequest): Promise<CreateSessionResponse> {
    const command = validateCreateSession(request);
    const sessionId = command.sessionId ?? this.deps.newId();
    const alreadyExists = () =>
      new AlreadyExistsError(`session ${sessionId} already exists`, {
        reason: "session_exists",
        context: { session_id: sessionId },
      });
    return this.write({ sessionId, retryOnSeqConflict: false, onUniqueViolation: alreadyExists }, async (trx) => {
      if ((await this.readSession(trx, sessionId, false)) !== undefined) throw alreadyExists();
      if (command.parentSessionId !== undefined) {
        requireParentSession(
          await this.readSession(trx, command.parentSessionId, false),
          command.parentSessionId,
          command.owner,
        );
      }
      const source =
        command.continuedFromSessionId === undefined
          ? undefined
          : decideInheritance(await this.readSession(trx, command.continuedFromSessionId, false), command.owner);
      // Stored summaries were scrubbed when committed; terms the harness knows now are removed too.
      const inherited =
        source === undefined || command.personalTerms.length === 0
          ? source
          : { ...source, summary: scrubSummary(source.summary, command.personalTerms) };
      const now = this.deps.now();
      const row: SessionRow = {
        session_id: sessionId,
        owner: command.owner,
        workspace: command.workspace,
        timezone: command.timezone,
        kind: command.kind,
        parent_session_id: command.parentSessionId ?? null,
        last_seq: 1,
        compaction_generation: 0,
        compaction_boundary_message_id: null,
        // The inherited summary is the new session's summary until its own first compaction.
        summary: inherited?.summary ?? "",
        inherited_summary_from: inherited?.from ?? null,
        content_chars: 0,
        serialized_bytes: 0,
        created_at_ms: now,
        deleted: false,
        ended: false,
        locale: command.locale,
      };
      await trx("session").insert(row);
      await this.appendEvent(trx, sessionId, 1, now, {
        $case: "sessionCreated",
        value: {
          owner: command.owner,
          workspace: command.workspace,
          timezone: command.timezone,
          kind: kindFromName(command.kind),
          parentSessionId: command.parentSessionId ?? "",
          inheritedSummaryFrom: inherited?.from ?? "",
          inheritedSummary: inherited?.summary ?? "",
          locale: command.locale,
        },
      });
      return { session: toSession(row), seq: 1 };
    });
  }

  async saveMessage(request: SaveMessageRequest): Promise<SaveMessageResponse> {
    const command = validateSaveMessage(request);
    const { sessionId } = command;
    const retryOnSeqConflict = command.expectedSeq === undefined;
    return this.attempt({ sessionId, retryOnSeqConflict }, () =>
      appendMessage(this.db, sessionId, (row) => {
        const session = requireWritableSession(
          row === undefined ? undefined : toSessionState(row as unknown as SessionRow),
          sessionId,
        );
        checkExpectedSeq(command.expectedSeq, session.lastSeq);
        const usage = decideMessageCapacity(session, command, this.limits);
        const now = this.deps.now();
        const seq = session.lastSeq + 1;
        const messageId = this.deps.newId();
        const localDate = localDateOf(now, session.timezone);
        const event = this.eventRow(sessionId, seq, now, {
          $case: "messageSaved",
          value: {
            messageId,
            role: roleFromName(command.role),
            content: [...command.content],
            thinkingChars: command.thinkingChars,
            localDate,
          },
        });
        return {
          event,
          message: {
            messageId,
            role: command.role,
            contentJson: storedContentJson(command.content),
            thinkingText: command.thinkingText,
            thinkingChars: command.thinkingChars,
            contentChars: command.contentChars,
            localDate,
          },
          session: {
            contentChars: usage.contentChars,
            serializedBytes: usage.serializedBytes,
            lastSeq: session.lastSeq,
          },
          result: { seq, messageId, createdAtMs: now, localDate },
        };
      }),
    );
  }

  async deleteMessage(request: DeleteMessageRequest): Promise<WriteResponse> {
    const command = validateDeleteMessage(request);
    const { sessionId } = command;
    return this.write({ sessionId, retryOnSeqConflict: command.expectedSeq === undefined }, async (trx) => {
      const session = requireWritableSession(await this.readSession(trx, sessionId, true), sessionId);
      checkExpectedSeq(command.expectedSeq, session.lastSeq);
      const message = requireDeletableMessage(
        await this.readMessage(trx, command.messageId),
        sessionId,
        command.messageId,
      );
      const now = this.deps.now();
      const seq = session.lastSeq + 1;
      await this.appendEvent(trx, sessionId, seq, now, {
        $case: "messageDeleted",
        value: { messageId: message.messageId },
      });
      await trx("message").where({ message_id: message.messageId }).update({ deleted: true });
      // A deleted message no longer reaches a model, so it gives its characters back; its bytes stay
      // in serialized_bytes because the row is still stored (and listed with include_deleted).
      await this.advanceSession(trx, session, seq, {
        content_chars: Math.max(0, session.contentChars - message.contentChars),
      });
      return { seq };
    });
  }

  async commitCompaction(request: CommitCompactionRequest): Promise<CommitCompactionResponse> {
    const command = validateCommitCompaction(request);
    const { sessionId } = command;
    return this.write({ sessionId, retryOnSeqConflict: true }, async (trx) => {
      const session = requireWritableSession(await this.readSession(trx, sessionId, true), sessionId);
      const boundary = await this.readMessage(trx, command.boundaryMessageId);
      const currentBoundary =
        session.compactionBoundaryMessageId === undefined
          ? undefined
          : await this.readMessage(trx, session.compactionBoundaryMessageId);
      const { generation } = decideCompaction({
        session,
        expectedGeneration: command.expectedGeneration,
        boundaryMessageId: command.boundaryMessageId,
        boundary,
        currentBoundary,
      });
      const userRows: Pick<MessageRow, "content_json">[] = await trx("message")
        .where({ session_id: sessionId, role: "user" })
        .orderBy("seq")
        .select("content_json");
      const personalTerms = extractPersonalTerms(
        userRows.map((row) => ({ role: Role.ROLE_USER, content: parseStoredContent(row.content_json) })),
      );
      const summary = scrubSummary(command.summary, [...personalTerms, ...command.personalTerms]);
      const now = this.deps.now();
      const seq = session.lastSeq + 1;
      await this.appendEvent(trx, sessionId, seq, now, {
        $case: "compactionCommitted",
        value: { generation, boundaryMessageId: command.boundaryMessageId, summary },
      });
      await trx("compaction").insert({
        session_id: sessionId,
        generation,
        boundary_message_id: command.boundaryMessageId,
        summary,
        committed_at_ms: now,
      });
      await this.advanceSession(trx, session, seq, {
        compaction_generation: generation,
        compaction_boundary_message_id: command.boundaryMessageId,
        summary,
      });
      return { seq, generation, summary };
    });
  }

  async deleteSession(request: DeleteSessionRequest): Promise<WriteResponse> {
    const { sessionId } = validateDeleteSession(request);
    return this.write({ sessionId, retryOnSeqConflict: true }, async (trx) => {
      const session = requireLiveSession(await this.readSession(trx, sessionId, true), sessionId);
      const seq = session.lastSeq + 1;
      await this.appendEvent(trx, sessionId, seq, this.deps.now(), { $case: "sessionDeleted", value: {} });
      await this.advanceSession(trx, session, seq, { deleted: true });
      return { seq };
    });
  }

  async promoteSideTask(request: PromoteSideTaskRequest): Promise<WriteResponse> {
    const { sessionId } = validatePromoteSideTask(request);
    return this.write({ sessionId, retryOnSeqConflict: true }, async (trx) => {
      const session = requirePromotableSideTask(await this.readSession(trx, sessionId, true), sessionId);
      const seq = session.lastSeq + 1;
      await this.appendEvent(trx, sessionId, seq, this.deps.now(), {
        $case: "sideTaskPromoted",
        value: { parentSessionId: session.parentSessionId ?? "" },
      });
      await this.advanceSession(trx, session, seq, { ended: true });
      return { seq };
    });
  }

  /**
   * Events after `after_seq`, oldest first. Deleted sessions stay readable so consumers can catch up
   * to (and apply) the SessionDeleted event; the page never goes past the last_seq it reports.
   */
  async readEvents(request: ReadEventsRequest): Promise<ReadEventsResponse> {
    const command = validateReadEvents(request);
    // One statement (the session's last_seq and the page together), in plain SQL: prompt-assembly
    // asks this before every build.
    return this.read(command.sessionId, async () => {
      const rows = await withSql(this.db, (sql) =>
        sql.rows<{ last_seq: number | string; payload: unknown }>(
          `SELECT s.last_seq, e.payload FROM session s
             LEFT JOIN session_event e ON e.session_id = s.session_id AND e.seq > ? AND e.seq <= s.last_seq
           WHERE s.session_id = ? ORDER BY e.seq LIMIT ?`,
          [command.afterSeq, command.sessionId, command.limit],
        ),
      );
      const first = rows[0];
      if (first === undefined) throw sessionNotFound(command.sessionId);
      const events: SessionEvent[] = rows
        .filter((row) => row.payload !== null)
        .map((row) => decodeSessionEvent(payloadBytes(row.payload)));
      return { events, lastSeq: Number(first.last_seq) };
    });
  }

  /** The stored session, deleted ones included (with deleted = true). */
  async getSession(request: GetSessionRequest): Promise<Session> {
    const { sessionId } = validateGetSession(request);
    return this.read(sessionId, async () => {
      const row: SessionRow | undefined = await this.db("session").where({ session_id: sessionId }).first();
      if (row === undefined) throw sessionNotFound(sessionId);
      return toSession(row);
    });
  }

  /** Stored messages in seq order, without thinking text (only its length). */
  async listMessages(request: ListMessagesRequest): Promise<ListMessagesResponse> {
    const command = validateListMessages(request);
    return this.read(command.sessionId, async () => {
      requireLiveSession(await this.readSession(this.db, command.sessionId, false), command.sessionId);
      const query = this.db("message").where({ session_id: command.sessionId });
      if (!command.includeDeleted) query.andWhere({ deleted: false });
      const rows: MessageRow[] = await query.orderBy("seq").select(...MESSAGE_COLUMNS);
      return { messages: rows.map(toStoredMessage) };
    });
  }

  private async write<T>(
    options: { sessionId: string; retryOnSeqConflict: boolean; onUniqueViolation?: () => Error },
    work: (trx: Knex.Transaction) => Promise<T>,
  ): Promise<T> {
    return this.attempt(options, () => this.db.transaction(work));
  }

  /** Runs a write transaction, once more when it lost a race it can simply rerun. */
  private async attempt<T>(
    options: { sessionId: string; retryOnSeqConflict: boolean; onUniqueViolation?: () => Error },
    run: () => Promise<T>,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (error) {
        // A lost race rolled everything back; rerunning re-reads the session and decides again.
        const retriable =
          attempt === 1 && (isLockFailure(error) || (options.retryOnSeqConflict && isUniqueViolation(error)));
        if (retriable) continue;
        if (options.onUniqueViolation !== undefined && isUniqueViolation(error)) throw options.onUniqueViolation();
        throw translateDbError(error, { session_id: options.sessionId });
      }
    }
  }

  private async read<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw translateDbError(error, { session_id: sessionId });
    }
  }

  private async readSession(db: Queryable, sessionId: string, lock: boolean): Promise<SessionState | undefined> {
    const query = db("session").where({ session_id: sessionId }).first();
    // SQLite has one writer at a time anyway (and knex warns on FOR UPDATE there).
    const row: SessionRow | undefined =
      lock && db.client.config.client === "mysql2" ? await query.forUpdate() : await query;
    return row === undefined ? undefined : toSessionState(row);
  }

  private async readMessage(db: Queryable, messageId: string): Promise<MessageState | undefined> {
    const row: MessageRow | undefined = await db("message")
      .where({ message_id: messageId })
      .first(...MESSAGE_COLUMNS);
    return row === undefined ? undefined : toMessageState(row);
  }

  private async appendEvent(
    trx: Knex.Transaction,
    sessionId: string,
    seq: number,
    occurredAtMs: number,
    payload: SessionEventPayload,
  ): Promise<void> {
    const event = this.eventRow(sessionId, seq, occurredAtMs, payload);
    await trx("session_event").insert({
      event_id: event.eventId,
      session_id: sessionId,
      seq,
      type: event.type,
      payload: Buffer.from(event.payload.buffer, event.payload.byteOffset, event.payload.byteLength),
      occurred_at_ms: occurredAtMs,
      traceparent: event.traceparent,
      published_at_ms: null,
    });
  }

  /** The event row: the encoded envelope with its id, type and the active trace. */
  private eventRow(sessionId: string, seq: number, occurredAtMs: number, payload: SessionEventPayload) {
    const event: SessionEvent = {
      eventId: this.deps.newEventId(),
      sessionId,
      seq,
      occurredAtMs,
      schemaVersion: SESSION_EVENT_SCHEMA_VERSION,
      type: sessionEventType(payload),
      payload,
    };
    const traceparent = this.deps.traceparent();
    return {
      eventId: event.eventId,
      seq,
      type: event.type,
      payload: encodeSessionEvent(event),
      occurredAtMs,
      // The column holds a version-00 traceparent (55 chars); anything else is not worth a failed write.
      traceparent: traceparent !== undefined && traceparent.length <= 55 ? traceparent : null,
    };
  }

  /** Moves last_seq forward, guarded by the seq the decision was based on. */
  private async advanceSession(
    trx: Knex.Transaction,
    session: SessionState,
    seq: number,
    changes: Record<string, string | number | boolean>,
  ): Promise<void> {
    const updated = await trx("session")
      .where({ session_id: session.sessionId, last_seq: session.lastSeq })
      .update({ ...changes, last_seq: seq });
    if (updated !== 1) {
      throw new ConflictError(`session ${session.sessionId} moved past seq ${session.lastSeq} during the write`, {
        reason: "seq_mismatch",
        context: { session_id: session.sessionId, last_seq: session.lastSeq },
      });
    }
  }
}

function sessionNotFound(sessionId: string): NotFoundError {
  return new NotFoundError(`session ${sessionId} not found`, {
    reason: "session_not_found",
    context: { session_id: sessionId },
  });
}
