// The "load the session view" stage. Each session's view is kept in memory between builds. A build
// whose min_seq the held view has already reached is served from it with no I/O at all: min_seq is
// the harness saying which writes it needs (the seq of its last SaveMessage, DeleteMessage,
// CommitCompaction ...). Otherwise (min_seq beyond the view, or 0: "the latest") the view is brought
// up to date by asking session-events, the source of truth, for the events after it (ReadEvents;
// usually the one message just saved). They are applied with the projection's own decision
// (domain/session-projection.ts). So a build sees every write up to min_seq, and with min_seq 0
// every write session-events acknowledged before it. Nothing waits for Kafka.
//
// The stored projection (fed from Kafka by whichever replica consumes the session's partition) is
// what a view starts from when none is in memory (a restart, an evicted session), so a long
// session is not replayed event by event; and it is what builds fall back on while session-events
// cannot be reached, as long as it has reached min_seq.
//
// Held views are also extended as session-events commits messages (FollowEvents, extendHeld;
// docs/decisions/followed-views.md), so the build that follows a SaveMessage usually finds its
// view there already and reads nothing.
//
// A view is only a cache: bounded in bytes (least recently used views go first), and never the
// only copy of anything.

import { type Caller, requireVisibleSession, sessionNotFound } from "@prefix-guard/access";
import { FailedPreconditionError, NotFoundError, UnavailableError } from "@prefix-guard/errors";
import { decodeSessionEvent } from "@prefix-guard/events";
import { LruMap } from "@prefix-guard/lru";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import {
  evolveSessionView,
  type ProjectedSessionView,
  planProjectionStep,
  sessionOf,
  viewOf,
} from "../../domain/session-projection";
import { projectedEventFromProto } from "../content-mapping";
import type { ProjectionStore } from "../ports";
import { PLAINTEXT_ONLY, type SealedEventOpener } from "../sealed-events";
import { readPage, type SessionEventsReader } from "../session-projection";

/** Memory of a view: its text (UTF-16), what the wire formats and hashes derive from it, and per-message overhead. */
export function estimateViewBytes(view: ProjectedSessionView): number {
  let textChars = (view.summary?.length ?? 0) + view.timezone.length;
  for (const message of view.messages) {
    for (const part of message.content) {
      switch (part.type) {
        case "text":
          textChars += part.text.length;
          break;
        case "image":
          textChars += part.url.length + part.mediaType.length;
          break;
        case "tool_call":
          textChars += part.argumentsJson.length + part.name.length + part.callId.length;
          break;
        case "tool_result":
          textChars += part.text.length + part.callId.length;
          break;
      }
    }
  }
  // ×2 bytes per UTF-16 unit, ×3 for the text and the wire fragments derived from it; ~500 bytes of
  // objects, message hash and fragment headers per message.
  return textChars * 6 + view.messages.length * 500 + 1_000;
}

/** A committed event as session-events' FollowEvents sends it: the stored envelope, encoded. */
export interface FollowedSessionEvent {
  readonly sessionId: string;
  readonly seq: number;
  readonly event: Uint8Array;
}

/** What became of a followed event: applied to a held view, or not (not held, not the next seq, unreadable). */
export type FollowOutcome = "extended" | "not_held" | "not_next" | "unreadable";

export interface SessionViewsOptions {
  readonly store: ProjectionStore;
  readonly sessions: SessionEventsReader;
  /** Byte budget of all views held in memory; 0 keeps none. */
  readonly cacheBytes: number;
  /** ReadEvents page size of the in-memory catch-up. */
  readonly pageSize?: number;
  /** Opens sealed content (schema 2) of the events read; default: plaintext events only. */
  readonly opener?: SealedEventOpener;
}

export class SessionViews {
  /** Weighed once per view stored (estimateViewBytes walks every message); a hit only refreshes it. */
  private readonly cache: LruMap<string, ProjectedSessionView>;
  /** The followed batch being applied (extendHeld applies them one after another). */
  private extending: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: SessionViewsOptions) {
    this.cache = new LruMap({ maxWeight: options.cacheBytes, weigh: estimateViewBytes });
  }

  /**
   * The session at min_seq or later.
   *
   * @throws NotFoundError (session_not_found, session_deleted), FailedPreconditionError
   * (session_ended for a promoted side task, min_seq_not_reached when session-events itself has
   * not got that far).
   */
  async load(sessionId: string, minSeq: number, caller: Caller): Promise<ProjectedSessionView> {
    const cached = this.cache.peek(sessionId) ?? null;
    if (cached !== null && minSeq > 0 && cached.lastSeq >= minSeq) {
      this.cache.get(sessionId); // a hit: now the most recently used
      return requireBuildable(requireVisibleSession(caller, cached, sessionId));
    }
    let view = cached ?? (await this.readStored(sessionId));
    try {
      view = await this.catchUpFromEvents(sessionId, view);
    } catch (error) {
      // session-events down: the stored projection (or the view in memory, whichever is further)
      // still serves a build that it has caught up with.
      if (!(error instanceof UnavailableError)) throw error;
      const stored = cached === null ? view : await this.readStored(sessionId);
      const freshest = [cached, stored].reduce<ProjectedSessionView | null>(
        (best, candidate) =>
          candidate !== null && (best === null || candidate.lastSeq > best.lastSeq) ? candidate : best,
        null,
      );
      if (freshest === null || freshest.lastSeq < minSeq) throw error;
      view = freshest;
    }
    requireVisibleSession(caller, view, sessionId);
    if (view.lastSeq < minSeq) {
      throw new FailedPreconditionError(
        `min_seq ${minSeq} is beyond session ${sessionId}'s last event (seq ${view.lastSeq}) in session-events`,
        {
          reason: "min_seq_not_reached",
          context: { session_id: sessionId, min_seq: minSeq, projection_seq: view.lastSeq },
        },
      );
    }
    this.remember(sessionId, view);
    // Before anything else is said about it (deleted, ended, behind min_seq would each confirm it
    // exists): another tenant's session is a missing one.
    return requireBuildable(requireVisibleSession(caller, view, sessionId));
  }

  /**
   * Extends held views with events session-events committed. An event is applied only to a view
   * held at the seq just before it, with the projection's own decision (as a catch-up applies
   * it), so a missed, repeated or reordered event changes nothing: the next build reads what the
   * view lacks with ReadEvents, as before. Events of sessions not held are not even decoded.
   */
  extendHeld(events: readonly FollowedSessionEvent[]): Promise<FollowOutcome[]> {
    // One batch at a time, in arrival order: a batch still opening its content must not make the
    // next one's events look out of order.
    const extended = this.extending.then(() => this.extendHeldNow(events));
    this.extending = extended.catch(() => undefined);
    return extended;
  }

  private async extendHeldNow(events: readonly FollowedSessionEvent[]): Promise<FollowOutcome[]> {
    const outcomes: FollowOutcome[] = events.map((followed) => {
      const held = this.cache.peek(followed.sessionId);
      if (held === undefined) return "not_held";
      return held.lastSeq === followed.seq - 1 ? "extended" : "not_next";
    });
    const decoded: SessionEvent[] = [];
    // The index in `events` of each decoded one (open() answers in the order it was given).
    const indexOf: number[] = [];
    events.forEach((followed, index) => {
      if (outcomes[index] !== "extended") return;
      try {
        const proto = decodeSessionEvent(followed.event);
        if (proto.sessionId !== followed.sessionId || proto.seq !== followed.seq) throw new Error("envelope mismatch");
        decoded.push(proto);
        indexOf.push(index);
      } catch {
        outcomes[index] = "unreadable";
      }
    });
    if (decoded.length === 0) return outcomes;
    let opened: SessionEvent[];
    try {
      opened = await (this.options.opener ?? PLAINTEXT_ONLY).open(decoded);
    } catch {
      // Keys unreachable: the builds will catch up themselves.
      for (const index of indexOf) outcomes[index] = "unreadable";
      return outcomes;
    }
    opened.forEach((proto, i) => {
      const index = indexOf[i] as number;
      try {
        const event = projectedEventFromProto(proto);
        // Checked again: a build may have moved the view while the content was opened.
        const held = this.cache.peek(event.sessionId);
        if (held === undefined || held.lastSeq !== event.seq - 1) {
          outcomes[index] = "not_next";
          return;
        }
        this.cache.set(
          event.sessionId,
          evolveSessionView(held, event.sessionId, planProjectionStep(sessionOf(held), event)),
        );
      } catch {
        // An event the projection cannot place is the consumer's to report (DLQ); here it is skipped.
        outcomes[index] = "not_next";
      }
    });
    return outcomes;
  }

  /** The view held in memory, as last read (possibly behind the store); no I/O. */
  peek(sessionId: string): ProjectedSessionView | undefined {
    return this.cache.peek(sessionId);
  }

  /** What this process holds, for the memory report. */
  stats(): { sessions: number; bytes: number; budgetBytes: number } {
    return { sessions: this.cache.size, bytes: this.cache.weight, budgetBytes: this.options.cacheBytes };
  }

  /**
   * Drops the views of sessions these applied events delete or end, so a caller that builds with an
   * old min_seq after the delete is not served from memory (on the replica consuming the partition;
   * min_seq 0 or the delete's seq reaches session-events on any replica).
   */
  forgetEnded(events: readonly SessionEvent[]): void {
    for (const event of events) {
      const kind = event.payload?.$case;
      if (kind === "sessionDeleted" || kind === "sideTaskPromoted") this.forget(event.sessionId);
    }
  }

  forget(sessionId: string): void {
    this.cache.delete(sessionId);
  }

  private async readStored(sessionId: string): Promise<ProjectedSessionView | null> {
    const read = await this.options.store.readView(sessionId);
    return read === null ? null : viewOf(sessionId, read.session, read.messages);
  }

  /** The view with every event session-events has after it; NotFound when it knows no such session. */
  private async catchUpFromEvents(sessionId: string, from: ProjectedSessionView | null): Promise<ProjectedSessionView> {
    let view = from;
    for (;;) {
      const position = view?.lastSeq ?? 0;
      const page = await readPage(this.options.sessions, sessionId, position, this.options.pageSize ?? 500);
      // Only what the view lacks is opened: a page never re-opens content the view already holds.
      const fresh = page.events.filter((proto) => proto.sessionId === sessionId && proto.seq > position);
      for (const proto of await (this.options.opener ?? PLAINTEXT_ONLY).open(fresh)) {
        const event = projectedEventFromProto(proto);
        if (event.sessionId !== sessionId || event.seq <= (view?.lastSeq ?? 0)) continue;
        if (event.seq !== (view?.lastSeq ?? 0) + 1) break;
        view = evolveSessionView(view, sessionId, planProjectionStep(view === null ? null : sessionOf(view), event));
      }
      const reached = view?.lastSeq ?? 0;
      if (page.events.length === 0 || reached >= page.lastSeq || reached === position) break;
    }
    if (view === null) {
      // Worded as session-events words it, and as another tenant's session is answered: one
      // "not found" for every reason a caller cannot build this session.
      throw sessionNotFound(sessionId);
    }
    return view;
  }

  /** Keeps `view` as the session's, the most recently used (least recently used views go first). */
  private remember(sessionId: string, view: ProjectedSessionView): void {
    // The view already held (a hit, a catch-up that found nothing new, or one that followed events
    // extended further meanwhile) is refreshed, not weighed again nor moved back.
    const held = this.cache.peek(sessionId);
    if (held === view || (held !== undefined && held.lastSeq > view.lastSeq)) this.cache.get(sessionId);
    else this.cache.set(sessionId, view);
  }
}

function requireBuildable(view: ProjectedSessionView): ProjectedSessionView {
  if (view.deleted) {
    throw new NotFoundError(`session ${view.sessionId} is deleted`, {
      reason: "session_deleted",
      context: { session_id: view.sessionId },
    });
  }
  if (view.ended) {
    throw new FailedPreconditionError(`session ${view.sessionId} is an ended side task (promoted)`, {
      reason: "session_ended",
      context: { session_id: view.sessionId },
    });
  }
  return view;
}
