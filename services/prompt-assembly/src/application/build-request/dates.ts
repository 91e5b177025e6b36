// Where the current-date section's date comes from, and whether a day change is announced. The
// product anchors to the session's first user message and announces every new day in the request
// copy (seed 000); a benchmark baseline can show today's date instead through the same port.

import { InternalError } from "@prefix-guard/errors";
import { localDateOf } from "@prefix-guard/events/local-date";
import { resolveAnchorDate } from "../../domain/date-anchor";
import type { StoredMessage } from "../../domain/model";

export interface DateAnchoring {
  /** The date the system prompt carries, given the stored messages and today in the session's zone. */
  anchorDate(messages: readonly StoredMessage[], todayLocalDate: string): string;
  readonly announceDayChanges: boolean;
  /** How the prefix explanation reads a moved date; absent is the product. */
  readonly dateSource?: "first_user_message" | "today";
}

export const ANCHOR_TO_FIRST_USER_MESSAGE: DateAnchoring = {
  anchorDate: resolveAnchorDate,
  announceDayChanges: true,
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
