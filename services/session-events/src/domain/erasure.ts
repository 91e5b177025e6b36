// Erasure of a session: what of its stored events must go, and when a session is idle
// long enough for the retention sweep. Pure: the application reads and writes the rows.

import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";

/** Event rows rewritten per UPDATE while erasing a session with a long log. */
export const ERASE_EVENT_BATCH = 500;
/** Idle sessions the retention sweep erases per round, each in its own short transaction. */
export const RETENTION_SWEEP_BATCH = 100;

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The event without any of the user's content (message parts, summaries, inherited summaries, their
 * sealed form), keeping what consumers need to stay consistent: ids, seq, type, counts, dates.
 * Fields this version does not know are dropped too: a newer writer may have put content there.
 * undefined when the event carries nothing to remove, so its row need not be rewritten.
 */
export function withoutContent(event: SessionEvent): SessionEvent | undefined {
  const { _unknownFields: unknownEnvelopeFields, payload, ...envelope } = event;
  let stripped: SessionEvent["payload"];
  let changed = hasFields(unknownEnvelopeFields);
  switch (payload?.$case) {
    case "sessionCreated": {
      const { inheritedSummary, sealed, _unknownFields, ...kept } = payload.value;
      changed ||= inheritedSummary.length > 0 || sealed !== undefined || hasFields(_unknownFields);
      stripped = { $case: "sessionCreated", value: { ...kept, inheritedSummary: "" } };
      break;
    }
    case "messageSaved": {
      const { content, sealed, _unknownFields, ...kept } = payload.value;
      changed ||= content.length > 0 || sealed !== undefined || hasFields(_unknownFields);
      stripped = { $case: "messageSaved", value: { ...kept, content: [] } };
      break;
    }
    case "compactionCommitted": {
      const { summary, sealed, _unknownFields, ...kept } = payload.value;
      changed ||= summary.length > 0 || sealed !== undefined || hasFields(_unknownFields);
      stripped = { $case: "compactionCommitted", value: { ...kept, summary: "" } };
      break;
    }
    default: {
      // No content of its own; only unknown fields could carry any.
      if (payload === undefined) {
        stripped = undefined;
        break;
      }
      const { _unknownFields, ...kept } = payload.value;
      changed ||= hasFields(_unknownFields);
      stripped = { ...payload, value: kept } as SessionEvent["payload"];
    }
  }
  return changed ? { ...envelope, payload: stripped } : undefined;
}

function hasFields(fields: { readonly [key: number]: readonly Uint8Array[] } | undefined): boolean {
  return fields !== undefined && Object.values(fields).some((values) => values.length > 0);
}

/**
 * Sessions whose last activity is before this instant are erased by the retention sweep; undefined
 * when retention is off (0 days).
 */
export function retentionCutoffMs(nowMs: number, retentionDays: number): number | undefined {
  if (!(retentionDays > 0)) return undefined;
  return nowMs - Math.round(retentionDays * DAY_MS);
}
