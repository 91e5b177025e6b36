// The "load the session view" stage. Each session's view is kept in memory between builds and
// brought up to date with one statement: the session row plus any message newer than the view
// (ProjectionStore.readView). The store is shared by every replica and written by whichever one
// consumes the session's partition, so that one read is also what tells this process that another
// one applied newer events.
//
// A view is only a cache: it is valid for the rewrite_id and seq it was read at, bounded in bytes
// (least recently used views go first), and never the only copy of anything. When the stored
// projection has not reached the build's min_seq yet (the event is still on its way through Kafka),
// the missing events are read straight from session-events and applied to the view in memory with
// the projection's own decision (domain/session-projection.ts); the stored projection catches up
// when the consumer gets there. No sleeping, and one round trip instead of a wait for delivery.

import { FailedPreconditionError, NotFoundError } from "@prefix-guard/errors";
import type { ProjectionStore } from "../../adapters/mysql/projection-store";
import type { StoredMessage } from "../../domain/model";
import {
  evolveSessionView,
  type ProjectedSessionView,
  planProjectionStep,
  sessionOf,
  viewOf,
} from "../../domain/session-projection";
import { projectedEventFromProto } from "../content-mapping";
import { readPage, type SessionEventsReader } from "../session-projection";

interface CachedView {
  readonly view: ProjectedSessionView;
  /** rewrite_id the view's stored messages were read under; "" when they came from events only. */
  readonly rewriteId: string;
  readonly bytes: number;
}

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

export interface SessionViewsOptions {
  readonly store: ProjectionStore;
  readonly sessions: SessionEventsReader;
  /** Byte budget of all views held in memory; 0 keeps none. */
  readonly cacheBytes: number;
  /** ReadEvents page size of the in-memory catch-up. */
  readonly pageSize?: number;
}

export class SessionViews {
  private readonly cache = new Map<string, CachedView>();
  private cachedBytes = 0;

  constructor(private readonly options: SessionViewsOptions) {}

  /**
   * The session at min_seq or later.
   *
   * @throws NotFoundError (session_not_found, session_deleted), FailedPreconditionError
   * (session_ended for a promoted side task, min_seq_not_reached when session-events itself has
   * not got that far).
   */
  async load(sessionId: string, minSeq: number): Promise<ProjectedSessionView> {
    let entry = await this.readCurrent(sessionId, this.cache.get(sessionId));
    if (entry === null || entry.view.lastSeq < minSeq) entry = await this.catchUpFromEvents(sessionId, entry, minSeq);
    this.remember(sessionId, entry);
    return requireBuildable(entry.view);
  }

  /** The view held in memory, as last read (possibly behind the store); no I/O. */
  peek(sessionId: string): ProjectedSessionView | undefined {
    return this.cache.get(sessionId)?.view;
  }

  /** What this process holds, for the memory report. */
  stats(): { sessions: number; bytes: number; budgetBytes: number } {
    return { sessions: this.cache.size, bytes: this.cachedBytes, budgetBytes: this.options.cacheBytes };
  }

  forget(sessionId: string): void {
    const entry = this.cache.get(sessionId);
    if (entry === undefined) return;
    this.cache.delete(sessionId);
    this.cachedBytes -= entry.bytes;
  }

  private async readCurrent(sessionId: string, cached: CachedView | undefined): Promise<CachedView | null> {
    const { store } = this.options;
    const afterSeq = cached?.view.lastSeq ?? 0;
    const read = await store.readView(sessionId, afterSeq);
    if (read === null) return cached ?? null;
    const { stored, messages } = read;
    if (cached !== undefined && stored.rewriteId === cached.rewriteId) {
      // Memory is ahead of the store when this process read events the consumer has not applied yet.
      if (stored.session.lastSeq <= cached.view.lastSeq) return cached;
      return this.entry(viewOf(sessionId, stored.session, appendAll(cached.view.messages, messages)), stored.rewriteId);
    }
    if (afterSeq === 0) return this.entry(viewOf(sessionId, stored.session, messages), stored.rewriteId);
    // Stored messages were rewritten (a deletion, a re-created id, a rebuild): read them whole.
    const whole = await store.readView(sessionId, 0);
    if (whole === null) return null;
    return this.entry(viewOf(sessionId, whole.stored.session, whole.messages), whole.stored.rewriteId);
  }

  private async catchUpFromEvents(sessionId: string, from: CachedView | null, minSeq: number): Promise<CachedView> {
    let view = from?.view ?? null;
    let rewritten = false;
    for (;;) {
      const position = view?.lastSeq ?? 0;
      const page = await readPage(this.options.sessions, sessionId, position, this.options.pageSize ?? 500);
      for (const proto of page.events) {
        const event = projectedEventFromProto(proto);
        if (event.sessionId !== sessionId || event.seq <= (view?.lastSeq ?? 0)) continue;
        if (event.seq !== (view?.lastSeq ?? 0) + 1) break;
        const step = planProjectionStep(view === null ? null : sessionOf(view), event);
        rewritten ||= step.kind !== "appendMessage" && step.kind !== "updateSession";
        view = evolveSessionView(view, sessionId, step);
      }
      const reached = view?.lastSeq ?? 0;
      if (page.events.length === 0 || reached >= page.lastSeq || reached === position) break;
    }
    if (view === null) {
      throw new NotFoundError(`session ${sessionId} is not known to prompt-assembly`, {
        reason: "session_not_found",
        context: { session_id: sessionId },
      });
    }
    if (view.lastSeq < minSeq) {
      throw new FailedPreconditionError(
        `min_seq ${minSeq} is beyond session ${sessionId}'s last event (seq ${view.lastSeq}) in session-events`,
        {
          reason: "min_seq_not_reached",
          context: { session_id: sessionId, min_seq: minSeq, projection_seq: view.lastSeq },
        },
      );
    }
    // A view whose stored messages were rewritten in memory no longer matches any stored rewrite_id.
    return this.entry(view, rewritten || from === null ? "" : from.rewriteId);
  }

  private entry(view: ProjectedSessionView, rewriteId: string): CachedView {
    return { view, rewriteId, bytes: estimateViewBytes(view) };
  }

  private remember(sessionId: string, entry: CachedView): void {
    this.forget(sessionId);
    if (entry.bytes > this.options.cacheBytes) return;
    this.cache.set(sessionId, entry);
    this.cachedBytes += entry.bytes;
    for (const [oldest, evicted] of this.cache) {
      if (this.cachedBytes <= this.options.cacheBytes) break;
      this.cache.delete(oldest);
      this.cachedBytes -= evicted.bytes;
    }
  }
}

function appendAll(messages: readonly StoredMessage[], newer: readonly StoredMessage[]): readonly StoredMessage[] {
  return newer.length === 0 ? messages : [...messages, ...newer];
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
