// Reading sealed session events outside prefix-guard. From schema 2 on, a SessionEvent's
// content (message parts, compaction summary, inherited summary) travels only in `sealed`, encrypted
// with its session's data key; GetDataKeys gives the keys to principals with the `subscriber` (or
// `peer`) role. Deleting a session destroys its key, and with it every copy of its content.

import { FailedPreconditionError, ValidationError } from "@prefix-guard/errors";
import { sealedContentOf, withOpenedContent } from "@prefix-guard/events";
import { callUnary } from "@prefix-guard/grpc/client";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { type DataKey, SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { ChannelPool } from "./channel-pool";
import { type CallOverrides, credentialsOf, type HarnessClientOptions, metadataOf } from "./harness-client";
import { translateClientError } from "./peer-errors";

/** GetDataKeys' bound on ids per request; DataKeyClient splits longer lists. */
export const MAX_DATA_KEYS_PER_CALL = 100;

/** A session's data key: GetDataKeys' DataKey, or just its id and bytes. */
export interface SessionDataKey {
  /** When given, must be the event's session. */
  readonly sessionId?: string;
  readonly keyId: string;
  /** 32 bytes; empty when erased. */
  readonly key: Uint8Array;
  readonly erased?: boolean;
}

/** Whether the event carries sealed content (and so needs its session's key to be read). */
export function isSealedEvent(event: SessionEvent): boolean {
  return sealedContentOf(event) !== undefined;
}

/**
 * The event with its plaintext fields (MessageSaved.content, CompactionCommitted.summary,
 * SessionCreated.inheritedSummary) filled from `sealed`, and `sealed` cleared. An event without a
 * seal is returned as it is. With an erased key (`erased`, no key bytes) the content no longer exists:
 * the fields are returned empty.
 *
 * @throws ValidationError: `key` is another session's (field "key"), or the seal does not open with it
 * (field "sealed", reason `sealed_content_unreadable`: another key, or changed bytes).
 */
export function openSealedEvent(event: SessionEvent, key: SessionDataKey): SessionEvent {
  const payload = event.payload;
  const sealed = sealedContentOf(event);
  if (payload === undefined || sealed === undefined) return event;
  if (key.sessionId !== undefined && key.sessionId !== "" && key.sessionId !== event.sessionId) {
    throw new ValidationError("key", `the key is session ${key.sessionId}'s, the event session ${event.sessionId}'s`);
  }
  const erased = key.erased === true && key.key.length === 0;
  return withOpenedContent(event, erased ? null : { keyId: key.keyId, key: key.key });
}

export type DataKeyClientOptions = Pick<
  HarnessClientOptions,
  "deadlineMs" | "maxAttempts" | "credentials" | "tls" | "bearerToken" | "metadata" | "channelOptions"
> & {
  /** host:port of session-events. */
  readonly sessionEvents: string;
};

export interface DataKeyClient {
  /**
   * One key per id, in the given order (any number of ids: sent MAX_DATA_KEYS_PER_CALL at a time).
   * A key with `erased` was destroyed; one with neither key bytes nor `erased` is of an unknown session.
   */
  getDataKeys(sessionIds: readonly string[], overrides?: CallOverrides): Promise<DataKey[]>;
  /** The events opened (openSealedEvent), with one GetDataKeys per 100 sessions among the sealed ones. */
  openEvents(events: readonly SessionEvent[], overrides?: CallOverrides): Promise<SessionEvent[]>;
  close(): void;
}

/**
 * Fetches data keys from session-events with a bearer token (a `subscriber` principal), each attempt
 * with a deadline, retried on UNAVAILABLE (reading keys changes nothing). Keys are not cached here:
 * a subscriber keeps them only as long as it needs them, and forgets a session's at SessionDeleted.
 */
export function createDataKeyClient(options: DataKeyClientOptions): DataKeyClient {
  const deadlineMs = options.deadlineMs ?? 5_000;
  const maxAttempts = options.maxAttempts ?? 3;
  const channelCredentials = credentialsOf(options);
  const pool = new ChannelPool(channelCredentials, options.channelOptions);
  const sessions = new SessionEventsClient(options.sessionEvents, channelCredentials, {
    channelOverride: pool.channelFor(options.sessionEvents),
  });
  let closed = false;

  async function getDataKeys(sessionIds: readonly string[], overrides?: CallOverrides): Promise<DataKey[]> {
    if (closed) throw new FailedPreconditionError("data key client is closed");
    const keys: DataKey[] = [];
    for (let start = 0; start < sessionIds.length; start += MAX_DATA_KEYS_PER_CALL) {
      const chunk = sessionIds.slice(start, start + MAX_DATA_KEYS_PER_CALL);
      try {
        const response = await callUnary(
          sessions,
          sessions.getDataKeys,
          { sessionIds: [...chunk] },
          { deadlineMs: overrides?.deadlineMs ?? deadlineMs, idempotent: true, maxAttempts, ...metadataOf(options) },
        );
        const byId = new Map(response.keys.map((key) => [key.sessionId, key]));
        for (const sessionId of chunk) {
          keys.push(byId.get(sessionId) ?? { sessionId, keyId: "", key: Buffer.alloc(0), erased: false });
        }
      } catch (error) {
        throw translateClientError(error, "session-events");
      }
    }
    return keys;
  }

  return {
    getDataKeys,
    async openEvents(events, overrides) {
      const sealed = [...new Set(events.filter(isSealedEvent).map((event) => event.sessionId))];
      if (sealed.length === 0) return [...events];
      const keys = new Map((await getDataKeys(sealed, overrides)).map((key) => [key.sessionId, key]));
      return events.map((event) => {
        const key = keys.get(event.sessionId);
        if (key === undefined || !isSealedEvent(event)) return event;
        // An unknown session (no key, not erased) is gone with its key: its content reads as erased.
        return openSealedEvent(event, key.key.length === 0 ? { ...key, erased: true } : key);
      });
    },
    close() {
      closed = true;
      sessions.close();
      pool.close();
    },
  };
}
