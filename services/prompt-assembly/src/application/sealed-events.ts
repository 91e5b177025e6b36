// Opens the content session-events seals with each session's data key (crypto-shredding)
// before an event is mapped to the domain: from schema 2 on, MessageSaved, CompactionCommitted and
// SessionCreated carry their content only in `sealed`. Keys come from session-events' GetDataKeys
// and are cached here, so a session's events cost one key fetch per process, not one per event.
//
// A session whose key is destroyed was erased: its events are applied with no content at all (the
// SessionDeleted that follows drops the session anyway), never retried and never dead-lettered,
// since no retry can ever bring the content back. A seal that does not open with the session's live
// key (another key id, changed bytes) is a ValidationError, which the consumer dead-letters like any
// event that can never be applied.

import { InternalError } from "@prefix-guard/errors";
import { type DataKey, sealedContentOf, withOpenedContent } from "@prefix-guard/events";
import { LruMap } from "@prefix-guard/lru";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";

/** What session-events says about one session's key. */
export type SessionKeyState =
  | { readonly state: "live"; readonly key: DataKey }
  /** Destroyed by DeleteSession (or expiry): the content can never be read again. */
  | { readonly state: "erased" }
  /** session-events knows no such session (gone with its key): treated as erased. */
  | { readonly state: "unknown" };

/** Port over session-events GetDataKeys. */
export interface DataKeySource {
  /** 1..MAX_KEYS_PER_CALL distinct ids; an id missing from the answer counts as unknown. */
  getDataKeys(sessionIds: readonly string[]): Promise<ReadonlyMap<string, SessionKeyState>>;
}

/** GetDataKeys' own bound on ids per request. */
export const MAX_KEYS_PER_CALL = 100;
/** 32 bytes and an id per entry: 100k keys are a few MiB. */
export const DEFAULT_KEY_CACHE_ENTRIES = 100_000;

export interface SealedEventOpenerOptions {
  /** Keys held in memory at most (least recently used go first; 0: none); default DEFAULT_KEY_CACHE_ENTRIES. */
  readonly maxKeys?: number;
  /** Told of each event applied without its content because its session's key is gone. */
  readonly onContentErased?: (event: SessionEvent, state: "erased" | "unknown") => void;
}

export class SealedEventOpener {
  /** sessionId → live key; opening an event with it counts as a use. */
  private readonly keys: LruMap<string, DataKey>;
  /** GetDataKeys requests made (for tests and the memory report). */
  fetches = 0;

  /** `source` null: only plaintext events can be opened (tools and tests that never see schema 2). */
  constructor(
    private readonly source: DataKeySource | null,
    private readonly options: SealedEventOpenerOptions = {},
  ) {
    this.keys = new LruMap({ maxEntries: options.maxKeys ?? DEFAULT_KEY_CACHE_ENTRIES });
  }

  /**
   * The events with their content opened, in the same order. Events that carry no seal are returned
   * as they are; one GetDataKeys request per MAX_KEYS_PER_CALL sessions whose key is not cached.
   *
   * @throws ValidationError for an event whose seal does not open with its session's key,
   * UnavailableError (and the peer's other errors) when the keys cannot be fetched.
   */
  async open(events: readonly SessionEvent[]): Promise<SessionEvent[]> {
    const missing = new Set<string>();
    for (const event of events) {
      const sealed = sealedContentOf(event);
      if (sealed !== undefined && this.keys.peek(event.sessionId)?.keyId !== sealed.keyId) missing.add(event.sessionId);
    }
    const fetched = missing.size === 0 ? new Map<string, SessionKeyState>() : await this.fetch([...missing]);
    return events.map((event) => {
      const opened = this.openOne(event, fetched);
      // An erased session's key must not outlive it here either; a re-created id fetches its new one.
      if (event.payload?.$case === "sessionDeleted") this.keys.delete(event.sessionId);
      return opened;
    });
  }

  /** Keys held now, for the memory report. */
  get cachedKeys(): number {
    return this.keys.size;
  }

  private openOne(event: SessionEvent, fetched: ReadonlyMap<string, SessionKeyState>): SessionEvent {
    const sealed = sealedContentOf(event);
    if (sealed === undefined) return event;
    const cached = this.keys.peek(event.sessionId);
    if (cached !== undefined && cached.keyId === sealed.keyId) {
      this.keys.get(event.sessionId); // now the most recently used
      return withOpenedContent(event, cached);
    }
    const state = fetched.get(event.sessionId) ?? { state: "unknown" };
    if (state.state === "live") return withOpenedContent(event, state.key);
    this.options.onContentErased?.(event, state.state);
    return withOpenedContent(event, null);
  }

  private async fetch(sessionIds: readonly string[]): Promise<Map<string, SessionKeyState>> {
    const source = this.source;
    if (source === null) {
      throw new InternalError("a session event carries sealed content but no data key source is configured", {
        context: { session_id: sessionIds[0] ?? "" },
      });
    }
    const states = new Map<string, SessionKeyState>();
    for (let start = 0; start < sessionIds.length; start += MAX_KEYS_PER_CALL) {
      const chunk = sessionIds.slice(start, start + MAX_KEYS_PER_CALL);
      this.fetches += 1;
      const answer = await source.getDataKeys(chunk);
      for (const sessionId of chunk) {
        const state = answer.get(sessionId) ?? { state: "unknown" };
        states.set(sessionId, state);
        // Only live keys are kept: an erased or unknown answer is asked again, so an id that is
        // created again later is never taken for erased.
        if (state.state === "live") this.keys.set(sessionId, state.key);
      }
    }
    return states;
  }
}

/** The opener for a process that has no key source: plaintext events only. */
export const PLAINTEXT_ONLY = new SealedEventOpener(null);
