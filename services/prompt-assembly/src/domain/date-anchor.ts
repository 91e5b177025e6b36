// Date anchoring (seed 000): the system prompt carries the date of the session's first user
// message and never recomputes it, so crossing midnight does not rewrite the system prefix. The
// real date reaches the model as a <date-change> tag in front of the first user message of each
// new day, rendered on the request copy only (never stored).
//
// Everything here depends only on stored data (message order, each user message's localDate,
// the anchor), so rebuilding the same session gives the same bytes every turn (seed 000 §5.8).
//
// Intended order in the builder:
//   window   = buildHistoryWindow(session, …)
//   previous = previousUserDateBefore(session.messages, firstUserSeq(window.messages))
//   notices  = applyDateChangeNotices(window.messages, anchor, previous, locale)
//   final    = attachSummary(notices.messages, window.summaryText, locale)
// Notices go before the summary so the synthetic summary message (localDate "") never takes part
// in the date chain and the summary, which describes older content, reads above the date tag.

import type { WindowMessage } from "./history-window";
import type { ContentPart, Locale, StoredMessage } from "./model";
import { currentDateSectionText, dateChangeNoticeText, requireLocalDate } from "./texts";

/** Key of the system section this module renders (seed 000 §1.1 `current-date`). */
export const CURRENT_DATE_SECTION_KEY = "current-date";

function isDatedUserMessage(message: StoredMessage): boolean {
  return message.role === "user" && !message.deleted && message.localDate !== "";
}

/**
 * The session's anchor date: localDate of the first non-deleted user message (lowest seq), else
 * `todayLocalDate`. Re-derived every turn, so deleting the first message heals the anchor on the
 * next turn (one cache miss, by design, seed 000 §2.2). A user message without a localDate cannot
 * anchor anything and is passed over.
 *
 * @throws ValidationError when `todayLocalDate` is not a YYYY-MM-DD date.
 */
export function resolveAnchorDate(messages: readonly StoredMessage[], todayLocalDate: string): string {
  requireLocalDate("today_local_date", todayLocalDate);
  let first: StoredMessage | null = null;
  for (const message of messages) {
    if (isDatedUserMessage(message) && (first === null || message.seq < first.seq)) first = message;
  }
  return first === null ? todayLocalDate : first.localDate;
}

/**
 * The `current-date` section text, heading included. It states the session start date, says
 * <date-change> wins over it, and only mentions the shell `date` command when the session can
 * run one (embedded sessions cannot).
 *
 * @throws ValidationError when `anchorDate` is not a YYYY-MM-DD date.
 */
export function renderCurrentDateSection(
  anchorDate: string,
  options: { readonly locale: Locale; readonly allowShellClock: boolean },
): string {
  requireLocalDate("anchor_date", anchorDate);
  return currentDateSectionText(anchorDate, options.locale, options.allowShellClock);
}

/** Seq of the first user message in the window, or null when the window has none. */
export function firstUserSeq(window: readonly WindowMessage[]): number | null {
  for (const message of window) {
    if (message.role === "user" && message.localDate !== "") return message.seq;
  }
  return null;
}

/**
 * The date the first user message in the window must be compared with: localDate of the last
 * non-deleted user message before it, looking across the compaction boundary and across turns
 * the window dropped (seed 000 §5.2 `previousUserYmdBefore`). Null when the window has no user
 * message or nothing precedes it; the caller then compares with the anchor.
 */
export function previousUserDateBefore(
  messages: readonly StoredMessage[],
  firstWindowUserSeq: number | null,
): string | null {
  if (firstWindowUserSeq === null) return null;
  let previous: StoredMessage | null = null;
  for (const message of messages) {
    if (!isDatedUserMessage(message) || message.seq >= firstWindowUserSeq) continue;
    if (previous === null || message.seq > previous.seq) previous = message;
  }
  return previous === null ? null : previous.localDate;
}

/**
 * Seed 000 §5.3: walking the window in order, a user message whose localDate differs from the
 * previous user message's gets the <date-change> tag as a new leading text part. The chain starts
 * at `previousUserDate ?? anchorDate`; user messages without a localDate (synthetic ones) are
 * neither compared nor allowed to move the chain. Returns new arrays and new message objects for
 * the tagged messages; the input is never touched, because it is shared with the stored history.
 *
 * @throws ValidationError when a date that would be rendered is not a YYYY-MM-DD date.
 */
export function applyDateChangeNotices(
  window: readonly WindowMessage[],
  anchorDate: string,
  previousUserDate: string | null,
  locale: Locale,
): { messages: WindowMessage[]; noticeDates: string[] } {
  let previous = previousUserDate ?? anchorDate;
  const noticeDates: string[] = [];
  const messages = window.map((message): WindowMessage => {
    if (message.role !== "user" || message.localDate === "" || message.localDate === previous) return message;
    requireLocalDate(`messages[seq=${message.seq}].local_date`, message.localDate);
    previous = message.localDate;
    noticeDates.push(message.localDate);
    const notice: ContentPart = {
      type: "text",
      text: dateChangeNoticeText(message.localDate, locale),
    };
    return { ...message, content: [notice, ...message.content] };
  });
  return { messages, noticeDates };
}
