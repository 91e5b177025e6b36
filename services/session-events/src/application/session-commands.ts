import {
  type Caller,
  canSeeSession,
  isConfined,
  requireCreatableSession,
  requireVisibleSession,
} from "@prefix-guard/access";
import { isLockFailure, isUniqueViolation, translateDbError } from "@prefix-guard/db";
import { AlreadyExistsError, ConflictError, ResourceExhaustedError } from "@prefix-guard/errors";
import {
  type DataKey,
  decodeSessionEvent,
  encodeSessionEvent,
  newDataKey,
  SESSION_EVENT_SCHEMA_VERSION,
  type SessionEventPayload,
  sealFields,
  sessionEventType,
} from "@prefix-guard/events";
import { localDateOf } from "@prefix-guard/events/local-date";
import { Role } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import type {
  CommitCompactionRequest,
  CommitCompactionResponse,
  CreateSessionRequest,
  CreateSessionResponse,
  DeleteMessageRequest,
  DeleteSessionRequest,
  GetDataKeysRequest,
  GetDataKeysResponse,
  GetSessionRequest,
  ListMessagesRequest,
  ListMessagesResponse,
  PromoteSideTaskRequest,
  ReadEventsRequest,
  ReadEventsResponse,
  SaveMessageRequest,
  SaveMessageResponse,
  Session,
  WriteResponse,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
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
import { ERASE_EVENT_BATCH, withoutContent } from "../domain/erasure";
import { DEFAULT_SESSION_LIMITS, type SessionLimits } from "../domain/limits";
import { kindFromName, roleFromName, type SessionState } from "../domain/model";
import { storedContentJson } from "../domain/stored-content";
import { extractPersonalTerms, scrubSummary } from "../domain/summary-scrub";
import {
  validateCommitCompaction,
  validateCreateSession,
  validateDeleteMessage,
  validateDeleteSession,
  validateGetDataKeys,
  validateGetSession,
  validateListMessages,
  validatePromoteSideTask,
  validateReadEvents,
  validateSaveMessage,
} from "../domain/validation";
import { DataKeyCache } from "./data-key-cache";
import type { FollowedEvent } from "./event-feed";
import { MessageAppendGroups } from "./message-append-groups";
import type { EventRow, SessionChanges, SessionStore, SessionTransaction } from "./ports";

export interface SessionCommandsDeps {
  readonly store: SessionStore;
  readonly now: () => number;
  /** Envelope ids (UUIDv7-like, e.g. `() => newEventId(now())`). */
  readonly newEventId: () => string;
  /** Session ids (when the caller chose none) and message ids; must match the safe id charset. */
  readonly newId: () => string;
  /** W3C traceparent of the active span, stored on the event row for the relay. */
  readonly traceparent: () => string | undefined;
  readonly limits?: Partial<SessionLimits>;
  /** Messages appended in one transaction at most (group commit of SaveMessage). */
  readonly saveGroupMax?: number;
  /** Sessions' data keys held in memory at most (least recently used out); 100,000 by default. */
  readonly dataKeyCacheSize?: number;
  /** A new session's data key (libs/events newDataKey by default). */
  readonly newDataKey?: () => DataKey;
  /** Told of each MessageSaved event once its transaction committed (the followers' feed). */
  readonly committed?: (event: FollowedEvent) => void;
  /** Told of each session whose events ReadEvents answered (the feed sends only those sessions'). */
  readonly eventsRead?: (sessionId: string) => void;
}

/**
 * The write side of session-events. Every write is one transaction: read (and on MySQL lock) the
 * session row, decide, append exactly one event at last_seq + 1, update the projections. The event
 * row is also the outbox entry the relay publishes.
 */
export class SessionCommands {
  private readonly store: SessionStore;
  private readonly limits: SessionLimits;
  private readonly appendGroups: MessageAppendGroups;
  private readonly keys: DataKeyCache;
  private readonly newDataKey: () => DataKey;

  constructor(private readonly deps: SessionCommandsDeps) {
    this.store = deps.store;
    this.limits = { ...DEFAULT_SESSION_LIMITS, ...deps.limits };
    this.keys = new DataKeyCache(deps.dataKeyCacheSize ?? 100_000);
    this.newDataKey = deps.newDataKey ?? newDataKey;
    const keys = {
      cached: (sessionId: string) => this.keys.get(sessionId),
      create: () => this.newDataKey(),
      remember: (sessionId: string, key: DataKey) => this.keys.set(sessionId, key),
    };
    this.appendGroups = new MessageAppendGroups(
      { appendMessages: (group) => deps.store.appendMessages(group, keys, deps.now()) },
      deps.saveGroupMax ?? 128,
    );
  }

  async createSession(request: CreateSessionRequest, caller: Caller): Promise<CreateSessionResponse> {
    const command = validateCreateSession(request);
    requireCreatableSession(caller, command.owner, command.workspace);
    const { scope, name: createdBy, limits } = caller.principal;
    const sessionId = command.sessionId ?? this.deps.newId();
    const alreadyExists = () =>
      new AlreadyExistsError(`session ${sessionId} already exists`, {
        reason: "session_exists",
        context: { session_id: sessionId },
      });
    const dataKey = this.newDataKey();
    const options = { sessionId, retryOnSeqConflict: false, onUniqueViolation: alreadyExists };
    const created = await this.write(options, async (tx) => {
      if ((await tx.readSession(sessionId, false)) !== undefined) throw alreadyExists();
      const owner = { owner: command.owner, scope };
      if (command.parentSessionId !== undefined) {
        requireParentSession(await tx.readSession(command.parentSessionId, false), command.parentSessionId, owner);
      }
      if (isConfined(caller) && limits.maxSessions !== undefined) {
        const live = await tx.countLiveSessionsCreatedBy(createdBy);
        if (live >= limits.maxSessions)
          throw new ResourceExhaustedError(
            `principal ${createdBy} has ${live} live sessions, its quota; delete one or raise max_sessions`,
            { reason: "session_quota", context: { retry_after_ms: 60_000 } },
          );
      }
      const source =
        command.continuedFromSessionId === undefined
          ? undefined
          : decideInheritance(await tx.readSession(command.continuedFromSessionId, false), owner);
      // Stored summaries were scrubbed when committed; terms the harness knows now are removed too.
      const inherited =
        source === undefined || command.personalTerms.length === 0
          ? source
          : { ...source, summary: scrubSummary(source.summary, command.personalTerms) };
      const now = this.deps.now();
      const session = await tx.insertSession({
        sessionId,
        owner: command.owner,
        workspace: command.workspace,
        timezone: command.timezone,
        kind: command.kind,
        parentSessionId: command.parentSessionId,
        // The inherited summary is the new session's summary until its own first compaction.
        summary: inherited?.summary ?? "",
        inheritedSummaryFrom: inherited?.from,
        createdAtMs: now,
        locale: command.locale,
        scope,
        createdBy,
      });
      await tx.insertDataKey(sessionId, dataKey, now);
      const inheritedSummary = inherited?.summary ?? "";
      await tx.appendEvent(
        sessionId,
        this.eventRow(sessionId, 1, now, {
          $case: "sessionCreated",
          value: {
            owner: command.owner,
            workspace: command.workspace,
            timezone: command.timezone,
            kind: kindFromName(command.kind),
            parentSessionId: command.parentSessionId ?? "",
            inheritedSummaryFrom: inherited?.from ?? "",
            // Content travels sealed; an event without any carries no seal.
            inheritedSummary: "",
            sealed: inheritedSummary.length === 0 ? undefined : sealFields(dataKey, sessionId, 1, { inheritedSummary }),
            locale: command.locale,
            scope,
          },
        }),
      );
      return { session, seq: 1 };
    });
    this.keys.set(sessionId, dataKey);
    return created;
  }

  async saveMessage(request: SaveMessageRequest, caller: Caller): Promise<SaveMessageResponse> {
    const command = validateSaveMessage(request);
    const { sessionId } = command;
    const retryOnSeqConflict = command.expectedSeq === undefined;
    // Read here, in the caller's context: the group is written from another one.
    const traceparent = this.deps.traceparent();
    // The event of the attempt that committed (a seq conflict decides again).
    let decided: EventRow | undefined;
    const saved = await this.attempt({ sessionId, retryOnSeqConflict }, () =>
      this.appendGroups.append(sessionId, (locked, dataKey) => {
        const session = requireWritableSession(visible(caller, locked), sessionId);
        checkExpectedSeq(command.expectedSeq, session.lastSeq);
        const key = requireDataKey(dataKey, sessionId);
        const usage = decideMessageCapacity(session, command, this.limits);
        const now = this.deps.now();
        const seq = session.lastSeq + 1;
        const messageId = this.deps.newId();
        const localDate = localDateOf(now, session.timezone);
        const event = this.eventRow(
          sessionId,
          seq,
          now,
          {
            $case: "messageSaved",
            value: {
              messageId,
              role: roleFromName(command.role),
              content: [],
              sealed: sealFields(key, sessionId, seq, { content: [...command.content] }),
              thinkingChars: command.thinkingChars,
              localDate,
            },
          },
          traceparent,
        );
        decided = event;
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
    if (decided !== undefined) this.deps.committed?.({ sessionId, seq: decided.seq, event: decided.payload });
    return saved;
  }

  async deleteMessage(request: DeleteMessageRequest, caller: Caller): Promise<WriteResponse> {
    const command = validateDeleteMessage(request);
    const { sessionId } = command;
    return this.write({ sessionId, retryOnSeqConflict: command.expectedSeq === undefined }, async (tx) => {
      const session = requireWritableSession(visible(caller, await tx.readSession(sessionId, true)), sessionId);
      checkExpectedSeq(command.expectedSeq, session.lastSeq);
      const message = requireDeletableMessage(await tx.readMessage(command.messageId), sessionId, command.messageId);
      const now = this.deps.now();
      const seq = session.lastSeq + 1;
      await tx.appendEvent(
        sessionId,
        this.eventRow(sessionId, seq, now, { $case: "messageDeleted", value: { messageId: message.messageId } }),
      );
      await tx.flagMessageDeleted(message.messageId);
      // A deleted message no longer reaches a model, so it gives its characters back; its bytes stay
      // in serialized_bytes because the row is still stored (and listed with include_deleted).
      await this.advanceSession(tx, session, seq, {
        contentChars: Math.max(0, session.contentChars - message.contentChars),
        lastEventAtMs: now,
      });
      return { seq };
    });
  }

  async commitCompaction(request: CommitCompactionRequest, caller: Caller): Promise<CommitCompactionResponse> {
    const command = validateCommitCompaction(request);
    const { sessionId } = command;
    const scrub = (userContents: Awaited<ReturnType<SessionTransaction["userMessageContents"]>>) => {
      const userMessages = userContents.map((content) => ({ role: Role.ROLE_USER, content }));
      return scrubSummary(command.summary, [...extractPersonalTerms(userMessages), ...command.personalTerms]);
    };
    // Scrubbing reads up to 20,000 characters and every user message: it runs before the row lock,
    // on a read that takes none, so writers of this session never wait for it. The session's terms
    // change only with a write, and every write moves last_seq: the locked write below keeps this
    // scrub when last_seq is still the one read here, and scrubs again (under the lock) otherwise.
    const snapshot = await this.read(sessionId, () =>
      this.store.transaction(async (tx) => {
        const session = visible(caller, await tx.readSession(sessionId, false));
        return session === undefined
          ? undefined
          : { lastSeq: session.lastSeq, contents: await tx.userMessageContents(sessionId) };
      }),
    );
    let scrubbed =
      snapshot === undefined ? undefined : { lastSeq: snapshot.lastSeq, summary: scrub(snapshot.contents) };
    const committed = await this.write({ sessionId, retryOnSeqConflict: true }, async (tx) => {
      const session = requireWritableSession(visible(caller, await tx.readSession(sessionId, true)), sessionId);
      const boundary = await tx.readMessage(command.boundaryMessageId);
      const currentBoundary =
        session.compactionBoundaryMessageId === undefined
          ? undefined
          : await tx.readMessage(session.compactionBoundaryMessageId);
      const { generation } = decideCompaction({
        session,
        expectedGeneration: command.expectedGeneration,
        boundaryMessageId: command.boundaryMessageId,
        boundary,
        currentBoundary,
      });
      if (scrubbed?.lastSeq !== session.lastSeq) {
        scrubbed = { lastSeq: session.lastSeq, summary: scrub(await tx.userMessageContents(sessionId)) };
      }
      const { summary } = scrubbed;
      const now = this.deps.now();
      const seq = session.lastSeq + 1;
      const key = await this.dataKeyIn(tx, sessionId, now);
      await tx.appendEvent(
        sessionId,
        this.eventRow(sessionId, seq, now, {
          $case: "compactionCommitted",
          value: {
            generation,
            boundaryMessageId: command.boundaryMessageId,
            summary: "",
            sealed: summary.length === 0 ? undefined : sealFields(key, sessionId, seq, { summary }),
          },
        }),
      );
      await tx.insertCompaction({
        sessionId,
        generation,
        boundaryMessageId: command.boundaryMessageId,
        summary,
        committedAtMs: now,
      });
      await this.advanceSession(tx, session, seq, {
        compactionGeneration: generation,
        compactionBoundaryMessageId: command.boundaryMessageId,
        summary,
        lastEventAtMs: now,
      });
      return { response: { seq, generation, summary }, key };
    });
    this.keys.set(sessionId, committed.key);
    return committed.response;
  }

  /**
   * Deletes and erases the session, in one transaction with its SessionDeleted event:
   * its messages and compactions go, its summary is blanked, its key destroyed (every sealed copy
   * anywhere becomes unreadable) and its stored events are rewritten without content.
   */
  async deleteSession(request: DeleteSessionRequest, caller: Caller): Promise<WriteResponse> {
    const { sessionId } = validateDeleteSession(request);
    const response = await this.write({ sessionId, retryOnSeqConflict: true }, async (tx) => {
      const session = requireLiveSession(visible(caller, await tx.readSession(sessionId, true)), sessionId);
      return this.deleteAndErase(tx, session);
    });
    await this.afterErasure(sessionId);
    return response;
  }

  /**
   * Retention: erases the session like DeleteSession when it is still live and had no activity
   * since `cutoffMs` (checked again under the row lock: a message may have arrived since the sweep
   * listed it). True when it was erased.
   */
  async expireSession(sessionId: string, cutoffMs: number): Promise<boolean> {
    const erased = await this.write({ sessionId, retryOnSeqConflict: true }, async (tx) => {
      const session = await tx.readSession(sessionId, true);
      if (session === undefined || session.deleted || session.lastEventAtMs >= cutoffMs) return false;
      await this.deleteAndErase(tx, session);
      return true;
    });
    if (erased) await this.afterErasure(sessionId);
    return erased;
  }

  /**
   * Erases a session deleted before erasure existed (its SessionDeleted is already in the log).
   * True when there was one to erase.
   */
  async eraseDeletedSession(sessionId: string): Promise<boolean> {
    const erased = await this.write({ sessionId, retryOnSeqConflict: false }, async (tx) => {
      const session = await tx.readSession(sessionId, true);
      if (session === undefined || !session.deleted) return false;
      await tx.blankSummary(sessionId);
      await this.eraseContent(tx, sessionId);
      return true;
    });
    if (erased) await this.afterErasure(sessionId);
    return erased;
  }

  async promoteSideTask(request: PromoteSideTaskRequest, caller: Caller): Promise<WriteResponse> {
    const { sessionId } = validatePromoteSideTask(request);
    return this.write({ sessionId, retryOnSeqConflict: true }, async (tx) => {
      const session = requirePromotableSideTask(visible(caller, await tx.readSession(sessionId, true)), sessionId);
      const seq = session.lastSeq + 1;
      const now = this.deps.now();
      await tx.appendEvent(
        sessionId,
        this.eventRow(sessionId, seq, now, {
          $case: "sideTaskPromoted",
          value: { parentSessionId: session.parentSessionId ?? "" },
        }),
      );
      await this.advanceSession(tx, session, seq, { ended: true, lastEventAtMs: now });
      return { seq };
    });
  }

  /**
   * Events after `after_seq`, oldest first. Deleted sessions stay readable so consumers can catch up
   * to (and apply) the SessionDeleted event; the page never goes past the last_seq it reports.
   */
  async readEvents(request: ReadEventsRequest, caller: Caller): Promise<ReadEventsResponse> {
    const command = validateReadEvents(request);
    // One statement (the session's last_seq, ownership and the page together), in plain SQL:
    // prompt-assembly asks this before every build.
    return this.read(command.sessionId, async () => {
      const page = await this.store.readEventPage(command.sessionId, command.afterSeq, command.limit);
      requireVisibleSession(caller, page?.ownership, command.sessionId);
      this.deps.eventsRead?.(command.sessionId);
      return { events: page?.events ?? [], lastSeq: page?.lastSeq ?? 0 };
    });
  }

  /** The stored session, deleted ones included (with deleted = true). */
  async getSession(request: GetSessionRequest, caller: Caller): Promise<Session> {
    const { sessionId } = validateGetSession(request);
    return this.read(sessionId, async () => {
      const { scope: _scope, ...session } = requireVisibleSession(
        caller,
        await this.store.getSession(sessionId),
        sessionId,
      );
      return session;
    });
  }

  /** Stored messages in seq order, without thinking text (only its length). */
  async listMessages(request: ListMessagesRequest, caller: Caller): Promise<ListMessagesResponse> {
    const command = validateListMessages(request);
    return this.read(command.sessionId, async () => {
      requireLiveSession(visible(caller, await this.store.readSession(command.sessionId)), command.sessionId);
      return { messages: await this.store.listMessages(command.sessionId, command.includeDeleted) };
    });
  }

  /**
   * The data keys that open these sessions' sealed content, in request order (peers and
   * subscribers only). Always read from the table, never from this process's cache: another replica
   * may have erased a key since. Erased: no key, erased = true; unknown: no key, erased = false.
   */
  async getDataKeys(request: GetDataKeysRequest): Promise<GetDataKeysResponse> {
    const { sessionIds } = validateGetDataKeys(request);
    const stored = await this.read(sessionIds[0] ?? "", () => this.store.readDataKeys(sessionIds));
    return {
      keys: sessionIds.map((sessionId) => {
        const key = stored.get(sessionId);
        if (key === undefined || key.erased) {
          return { sessionId, keyId: "", key: Buffer.alloc(0), erased: key?.erased === true };
        }
        const bytes = key.key.key;
        return {
          sessionId,
          keyId: key.key.keyId,
          key: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
          erased: false,
        };
      }),
    };
  }

  /** Appends SessionDeleted at the next seq, marks the session deleted and erases its content. */
  private async deleteAndErase(tx: SessionTransaction, session: SessionState): Promise<WriteResponse> {
    const { sessionId } = session;
    const seq = session.lastSeq + 1;
    const now = this.deps.now();
    await tx.appendEvent(sessionId, this.eventRow(sessionId, seq, now, { $case: "sessionDeleted", value: {} }));
    await this.advanceSession(tx, session, seq, { deleted: true, summary: "", lastEventAtMs: now });
    await this.eraseContent(tx, sessionId);
    return { seq };
  }

  /**
   * Inside the session's locked transaction: deletes its messages and compactions, destroys its key
   * and rewrites every stored event without content (schema 1 plaintext and unpublished rows
   * included), ERASE_EVENT_BATCH rows per UPDATE. The caller blanks the session row's summary.
   */
  private async eraseContent(tx: SessionTransaction, sessionId: string): Promise<void> {
    await tx.deleteContentRows(sessionId);
    await tx.eraseDataKey(sessionId, this.deps.now());
    for (let afterId = 0; ; ) {
      const rows = await tx.eventPayloads(sessionId, afterId, ERASE_EVENT_BATCH);
      const rewritten = [];
      for (const row of rows) {
        const stripped = withoutContent(decodeSessionEvent(row.payload));
        if (stripped !== undefined) rewritten.push({ id: row.id, payload: encodeSessionEvent(stripped) });
      }
      await tx.replaceEventPayloads(rewritten);
      const last = rows.at(-1);
      if (last === undefined || rows.length < ERASE_EVENT_BATCH) break;
      afterId = last.id;
    }
  }

  /** After an erasure committed: the key leaves this process, and SQLite's WAL keeps no old page. */
  private async afterErasure(sessionId: string): Promise<void> {
    this.keys.delete(sessionId);
    await this.read(sessionId, () => this.store.flushErasure());
  }

  /** The session's data key inside its locked write: this process's copy, the stored one, or a new one. */
  private async dataKeyIn(tx: SessionTransaction, sessionId: string, nowMs: number): Promise<DataKey> {
    const cached = this.keys.get(sessionId);
    if (cached !== undefined) return cached;
    const stored = await tx.readDataKey(sessionId);
    if (stored !== undefined) return requireDataKey(stored.erased ? undefined : stored.key, sessionId);
    // A session created before keys existed gets its key with its first sealed write.
    const created = this.newDataKey();
    await tx.insertDataKey(sessionId, created, nowMs);
    return created;
  }

  private async write<T>(
    options: { sessionId: string; retryOnSeqConflict: boolean; onUniqueViolation?: () => Error },
    work: (tx: SessionTransaction) => Promise<T>,
  ): Promise<T> {
    return this.attempt(options, () => this.store.transaction(work));
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

  /** The event row: the encoded envelope with its id, type and the active trace. */
  private eventRow(
    sessionId: string,
    seq: number,
    occurredAtMs: number,
    payload: SessionEventPayload,
    traceparent: string | undefined = this.deps.traceparent(),
  ): EventRow {
    const event: SessionEvent = {
      eventId: this.deps.newEventId(),
      sessionId,
      seq,
      occurredAtMs,
      schemaVersion: SESSION_EVENT_SCHEMA_VERSION,
      type: sessionEventType(payload),
      payload,
    };
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
    tx: SessionTransaction,
    session: SessionState,
    seq: number,
    changes: SessionChanges,
  ): Promise<void> {
    if (!(await tx.advanceSession(session, seq, changes))) {
      throw new ConflictError(`session ${session.sessionId} moved past seq ${session.lastSeq} during the write`, {
        reason: "seq_mismatch",
        context: { session_id: session.sessionId, last_seq: session.lastSeq },
      });
    }
  }
}

/**
 * A writable session always has a key (made at creation or lazily); none means it was erased, which
 * only happens to deleted sessions: a broken invariant, not a caller's mistake.
 */
function requireDataKey(key: DataKey | undefined, sessionId: string): DataKey {
  if (key === undefined) throw new Error(`session ${sessionId} is writable but has no data key`);
  return key;
}

/**
 * The session when the caller may see it; a session it may not see is passed on as missing, so the
 * domain's own "not found" answers for both and the two cannot be told apart.
 */
function visible(caller: Caller, session: SessionState | undefined): SessionState | undefined {
  return session !== undefined && canSeeSession(caller, session) ? session : undefined;
}
