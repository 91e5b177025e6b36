// What a session.events.v1 event means for the session's snapshot (seed 001 §3.5, §4.5, §4.6).
// The consumer only cleans up: resolve already fences stale snapshots by generation, so a late or
// missing CompactionCommitted never makes an old snapshot visible.

import { unhandledCase } from "@prefix-guard/errors";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { deletedLogLine, invalidatedLogLine } from "./log-lines";
import type { RulesEventPayload } from "./model";
import { deletedPayload, invalidatedPayload } from "./snapshot-events";

export interface SessionCleanup {
  /** Delete only a row pinned under an older generation; null deletes the row whatever its generation. */
  readonly belowGeneration: number | null;
  /** Due only if a row was removed. */
  readonly logLine: string;
  readonly event: RulesEventPayload;
}

/** null: the event does not concern snapshots (SessionCreated, MessageSaved, MessageDeleted). */
export function planSessionEventCleanup(event: Pick<SessionEvent, "sessionId" | "payload">): SessionCleanup | null {
  const payload = event.payload;
  if (payload === undefined) return null;
  switch (payload.$case) {
    case "compactionCommitted": {
      // Only rows older than the committed generation: a row already re-pinned under it (fencing)
      // holds the post-compaction rules and must survive a late or redelivered event.
      const generation = payload.value.generation;
      return {
        belowGeneration: generation,
        logLine: invalidatedLogLine(event.sessionId, "compaction-committed"),
        event: invalidatedPayload("compaction-committed", generation),
      };
    }
    case "sessionDeleted":
      return {
        belowGeneration: null,
        logLine: deletedLogLine(event.sessionId, "session-deleted"),
        event: deletedPayload("session-deleted"),
      };
    case "sideTaskPromoted":
      // The event is keyed by the promoted side session, which is logically deleted by the promotion
      // and never passes through SessionDeleted (§4.6 评审补充).
      return {
        belowGeneration: null,
        logLine: deletedLogLine(event.sessionId, "side-task-promoted"),
        event: deletedPayload("side-task-promoted"),
      };
    case "sessionCreated":
    case "messageSaved":
    case "messageDeleted":
      return null;
    default:
      return unhandledCase(payload, "session event payload");
  }
}
