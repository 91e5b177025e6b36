// Where the current-date section's date comes from, and how the history says a day changed. The
// product anchors to the session's first user message and announces every new day in the request
// copy (seed 000); another anchoring plugs in through the same port.

import { InternalError } from "@prefix-guard/errors";
import { localDateOf } from "@prefix-guard/events/local-date";
import type { DayChangeNotices } from "../../domain/assemble-request";
import { applyDateChangeNotices, resolveAnchorDate } from "../../domain/date-anchor";
import type { StoredMessage } from "../../domain/model";
import type { DateChangeExplanation } from "../../domain/prefix-monitor";

/** The port. */
export interface DateAnchoring {
  /** The date the system prompt carries, given the stored messages and today in the session's zone. */
  anchorDate(messages: readonly StoredMessage[], todayLocalDate: string): string;
  /** The notices prepended to the history's user messages that cross into a new day. */
  readonly dayChangeNotices: DayChangeNotices;
  /**
   * Why the current-date section changed between two builds, in this anchoring's words; absent
   * for the product's, where a moved anchor means the first user message was deleted.
   */
  readonly explainDateChange?: DateChangeExplanation;
}

export const ANCHOR_TO_FIRST_USER_MESSAGE: DateAnchoring = {
  anchorDate: resolveAnchorDate,
  dayChangeNotices: applyDateChangeNotices,
};

/** YYYY-MM-DD at instant `ms` in `timeZone`, computed the way session-events computes message dates. */
export function localDateIn(ms: number, timeZone: string): string {
  try {
    return localDateOf(ms, timeZone);
  } catch (error) {
    // session-events validated the zone when it stored it: a zone this runtime does not know is ours.
    throw new InternalError(`stored session timezone ${JSON.stringify(timeZone)} is not a time zone`, {
      cause: error,
    });
  }
}
