// What one session.events.v1 event does to prompt-assembly's copy of a session, decided once and
// applied two ways: to the stored projection (adapters/mysql/projection-store.ts, one transaction
// per batch of events) and to a session view held in memory (evolveSessionView, when a build reads
// the events it is missing straight from session-events). One decision, so the two can never
// disagree about what a session looks like after an event.

import { unhandledCase, ValidationError } from "@prefix-guard/errors";
import type { ContentPart, Locale, Role, SessionView, StoredMessage } from "./model";

/** session-events' CreateSession default; used only when an event carries no zone at all. */
export const DEFAULT_SESSION_TIMEZONE = "Asia/Shanghai";

export type SessionKindName = SessionView["kind"];

/** An event in domain terms (application/session-event-mapping.ts converts the proto). */
export interface ProjectedEvent {
  readonly sessionId: string;
  readonly seq: number;
  readonly occurredAtMs: number;
  readonly payload:
    | {
        readonly type: "sessionCreated";
        readonly kind: SessionKindName;
        readonly timezone: string;
        readonly inheritedSummary: string;
        readonly workspace: string;
        readonly locale: Locale;
        readonly owner: string;
        readonly scope: string;
      }
    | {
        readonly type: "messageSaved";
        readonly messageId: string;
        readonly role: Role;
        readonly content: readonly ContentPart[];
        readonly localDate: string;
      }
    | { readonly type: "messageDeleted"; readonly messageId: string }
    | {
        readonly type: "compactionCommitted";
        readonly generation: number;
        readonly boundaryMessageId: string;
        readonly summary: string;
      }
    | { readonly type: "sessionDeleted" }
    | { readonly type: "sideTaskPromoted" };
}

/** The session's own fields, as the projection stores them. */
export interface ProjectedSession {
  readonly kind: SessionKindName;
  readonly timezone: string;
  /** The workspace the session was created in: the rules source's workspace when a build names none. */
  readonly workspace: string;
  /** Language of every text rendered for the session, unless a build asks for another. */
  readonly locale: Locale;
  /** Who may see the session (with workspace): fixed by SessionCreated. */
  readonly owner: string;
  readonly scope: string;
  readonly generation: number;
  readonly boundaryMessageId: string | null;
  readonly summary: string | null;
  readonly lastSeq: number;
  readonly deleted: boolean;
  readonly ended: boolean;
}

/** What an event changes; `session` is the session row after it. */
export type ProjectionStep =
  /** SessionCreated: whatever was stored under the id before is replaced, not merged. */
  | { readonly kind: "reset"; readonly session: ProjectedSession }
  | { readonly kind: "appendMessage"; readonly message: StoredMessage; readonly session: ProjectedSession }
  /** Deletion only flags a message, so a compaction boundary can always be found. */
  | { readonly kind: "flagDeleted"; readonly messageId: string; readonly session: ProjectedSession }
  /** SessionDeleted / SideTaskPromoted: the messages and the summary go, the session stays as a tombstone. */
  | { readonly kind: "dropMessages"; readonly session: ProjectedSession }
  /** CompactionCommitted, or any event on a tombstone: only the session row moves. */
  | { readonly kind: "updateSession"; readonly session: ProjectedSession };

function nonEmptyOrNull(text: string): string | null {
  return text.length > 0 ? text : null;
}

/**
 * The step for `event`, given the session as stored before it (null when none is).
 *
 * @throws ValidationError for an event that can never be applied (before SessionCreated, a message
 * without an id): the consumer routes it to the DLQ.
 */
export function planProjectionStep(before: ProjectedSession | null, event: ProjectedEvent): ProjectionStep {
  const payload = event.payload;
  if (payload.type === "sessionCreated") {
    return {
      kind: "reset",
      session: {
        kind: payload.kind,
        timezone: payload.timezone.length > 0 ? payload.timezone : DEFAULT_SESSION_TIMEZONE,
        workspace: payload.workspace,
        locale: payload.locale,
        owner: payload.owner,
        scope: payload.scope,
        generation: 0,
        boundaryMessageId: null,
        summary: nonEmptyOrNull(payload.inheritedSummary.trim()),
        lastSeq: event.seq,
        deleted: false,
        ended: false,
      },
    };
  }
  if (before === null) {
    throw new ValidationError("session_id", `${payload.type} at seq ${event.seq} precedes SessionCreated`, {
      reason: "session_not_created",
    });
  }
  const moved: ProjectedSession = { ...before, lastSeq: event.seq };
  // A deleted or ended session keeps only its tombstone; later events just move the position.
  if (before.deleted || before.ended) return { kind: "updateSession", session: moved };
  switch (payload.type) {
    case "messageSaved":
      if (payload.messageId.length === 0) throw new ValidationError("message_saved.message_id", "must not be empty");
      return {
        kind: "appendMessage",
        session: moved,
        message: {
          messageId: payload.messageId,
          seq: event.seq,
          role: payload.role,
          content: payload.content,
          localDate: payload.localDate,
          createdAtMs: event.occurredAtMs,
          deleted: false,
        },
      };
    case "messageDeleted":
      return { kind: "flagDeleted", messageId: payload.messageId, session: moved };
    case "compactionCommitted":
      return {
        kind: "updateSession",
        session: {
          ...moved,
          generation: payload.generation,
          boundaryMessageId: nonEmptyOrNull(payload.boundaryMessageId),
          summary: nonEmptyOrNull(payload.summary.trim()),
        },
      };
    // The tombstone keeps ids and counters only: the summary is content, and after an erasure no
    // copy of it may remain.
    case "sessionDeleted":
      return { kind: "dropMessages", session: { ...moved, summary: null, deleted: true } };
    case "sideTaskPromoted":
      return { kind: "dropMessages", session: { ...moved, summary: null, ended: true } };
    default:
      return unhandledCase(payload, "session event");
  }
}

/** A session as the builder reads it: its row and every message in seq order (deleted ones flagged). */
export interface ProjectedSessionView extends SessionView {
  readonly timezone: string;
  readonly workspace: string;
  readonly locale: Locale;
  readonly owner: string;
  readonly scope: string;
  readonly deleted: boolean;
  readonly ended: boolean;
}

export function viewOf(sessionId: string, session: ProjectedSession, messages: readonly StoredMessage[]) {
  return { sessionId, ...session, messages } satisfies ProjectedSessionView;
}

/** The view after one step; a new object, the input is shared with earlier builds and never touched. */
export function evolveSessionView(
  view: ProjectedSessionView | null,
  sessionId: string,
  step: ProjectionStep,
): ProjectedSessionView {
  switch (step.kind) {
    case "reset":
    case "dropMessages":
      return viewOf(sessionId, step.session, []);
    case "appendMessage":
      return viewOf(sessionId, step.session, [...(view?.messages ?? []), step.message]);
    case "flagDeleted":
      return viewOf(
        sessionId,
        step.session,
        (view?.messages ?? []).map((message) =>
          message.messageId === step.messageId ? { ...message, deleted: true } : message,
        ),
      );
    case "updateSession":
      return viewOf(sessionId, step.session, view?.messages ?? []);
    default:
      return unhandledCase(step, "projection step");
  }
}

/** The session part of a view. */
export function sessionOf(view: ProjectedSessionView): ProjectedSession {
  return {
    kind: view.kind,
    timezone: view.timezone,
    workspace: view.workspace,
    locale: view.locale,
    owner: view.owner,
    scope: view.scope,
    generation: view.generation,
    boundaryMessageId: view.boundaryMessageId,
    summary: view.summary,
    lastSeq: view.lastSeq,
    deleted: view.deleted,
    ended: view.ended,
  };
}
