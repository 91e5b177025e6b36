// The history window (seed 002): which post-compaction messages go to the model, under a
// character budget that follows the model's context window, with every loss announced in
// model-visible text (a clipped message gets an omission marker, dropped turns get a count).

import { FailedPreconditionError, InternalError, ValidationError } from "@prefix-guard/errors";
import type { ChatMessage, ContentPart, Locale, SessionView, StoredMessage } from "./model";
import {
  droppedTurnsAfterSummaryText,
  droppedTurnsNotSummarisedText,
  omissionMarkerText,
  sessionSummaryText,
} from "./texts";

/** Used when the model catalogue has no context window for the model (seed 002 §2.2, 128 k). */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

// historyBudgetChars = clamp((window − RESERVED) × CHARS_PER_WINDOW_UNIT, MIN, MAX), seed 002 §2.2.
const RESERVED_CONTEXT = 60_000;
const CHARS_PER_WINDOW_UNIT = 1.5;
const MIN_HISTORY_BUDGET_CHARS = 4_000;
const MAX_HISTORY_BUDGET_CHARS = 40_000;

/**
 * Share of the history budget at which a checkpoint summary becomes due. 0.4 × 40,000 = 16,000 at
 * 128 k, the threshold the seed 002 mechanism shipped with, so the default model behaves exactly
 * as before. It must stay below 1: the summary is written asynchronously after the turn, and only a
 * threshold under the budget makes the summary happen before turns start being dropped; with a
 * fixed 16,000 every window under 70,667 dropped turns silently every turn (seed 002 BUG-730).
 */
export const CHECKPOINT_FRACTION = 0.4;

/**
 * Share of the budget one message may take. Without a cap a single pasted document larger than
 * the budget would evict every older turn and still overflow. Half keeps at least as much room
 * again for the turns around it, and is above CHECKPOINT_FRACTION, so any message long enough to
 * be clipped also makes a checkpoint due and its conclusions reach the summary.
 */
export const MESSAGE_CAP_FRACTION = 0.5;

/**
 * Fixed character cost of an image part. Its url is not model-visible text and may be a data URL
 * of megabytes; counting its length would evict all history for one screenshot.
 */
export const IMAGE_PART_CHARS = 1_000;

/** Id of the synthetic user message that carries the summary when the window starts with no user message. */
export const SUMMARY_MESSAGE_ID = "synthetic:session-summary";

if (!(CHECKPOINT_FRACTION > 0 && CHECKPOINT_FRACTION < 1 && CHECKPOINT_FRACTION < MESSAGE_CAP_FRACTION)) {
  throw new InternalError("CHECKPOINT_FRACTION must be in (0, 1) and below MESSAGE_CAP_FRACTION");
}

/** A history message as it goes to the model, still carrying the stored identity the date logic needs. */
export interface WindowMessage extends ChatMessage {
  readonly messageId: string;
  readonly seq: number;
  /** YYYY-MM-DD from the stored message; "" for synthetic messages, which the date chain skips. */
  readonly localDate: string;
}

export interface HistoryWindowStats {
  readonly keptMessages: number;
  readonly droppedTurns: number;
  /** Clipped messages among the kept ones (what the model sees marked). */
  readonly clippedMessages: number;
  readonly budgetChars: number;
  /** Unclipped characters of all post-boundary history before dropping: what a checkpoint has to cover. */
  readonly tailChars: number;
  readonly checkpointThresholdChars: number;
  /** Turns up to the compaction boundary, which the summary covers (0 without a boundary). */
  readonly summarisedTurns: number;
}

export interface HistoryWindow {
  readonly messages: WindowMessage[];
  /** Summary wrapper and/or dropped-turns announcement; null when there is neither. Place with attachSummary. */
  readonly summaryText: string | null;
  readonly stats: HistoryWindowStats;
  readonly checkpointDue: boolean;
}

/** @throws ValidationError when `contextWindow` is not a positive integer. */
export function historyBudgetChars(contextWindow: number | null): number {
  const window = contextWindow ?? DEFAULT_CONTEXT_WINDOW;
  if (!Number.isInteger(window) || window <= 0) {
    throw new ValidationError("context_window", `must be a positive integer, got ${String(contextWindow)}`);
  }
  const raw = Math.floor((window - RESERVED_CONTEXT) * CHARS_PER_WINDOW_UNIT);
  return Math.min(MAX_HISTORY_BUDGET_CHARS, Math.max(MIN_HISTORY_BUDGET_CHARS, raw));
}

/** Tail size above which a checkpoint summary is due; derived from the budget, never a literal. */
export function checkpointThresholdChars(contextWindow: number | null): number {
  return Math.floor(historyBudgetChars(contextWindow) * CHECKPOINT_FRACTION);
}

/** Largest size of a single message before it is clipped. */
export function messageCapChars(budgetChars: number): number {
  return Math.floor(budgetChars * MESSAGE_CAP_FRACTION);
}

/**
 * Pins seed 002's invariant "threshold < budget" for a context window.
 *
 * @throws InternalError when the invariant does not hold; ValidationError for a bad window.
 */
export function assertCheckpointThresholdBelowBudget(contextWindow: number | null): void {
  const threshold = checkpointThresholdChars(contextWindow);
  const budget = historyBudgetChars(contextWindow);
  if (!(threshold < budget)) {
    throw new InternalError(`checkpoint threshold ${threshold} is not below history budget ${budget}`, {
      context: {
        contextWindow: contextWindow ?? DEFAULT_CONTEXT_WINDOW,
        threshold,
        budget,
      },
    });
  }
}

function partChars(part: ContentPart): number {
  switch (part.type) {
    case "text":
      return part.text.length;
    case "tool_call":
      return part.argumentsJson.length;
    case "tool_result":
      return part.text.length;
    case "image":
      return IMAGE_PART_CHARS;
  }
}

/** Characters a message costs against the budget (UTF-16 code units, as String#length counts). */
export function contentChars(content: readonly ContentPart[]): number {
  let total = 0;
  for (const part of content) total += partChars(part);
  return total;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function clipText(text: string, allowance: number, locale: Locale): string {
  let keep = allowance;
  // Cutting between the halves of a surrogate pair would leave a lone surrogate in the request.
  if (keep > 0 && isHighSurrogate(text.charCodeAt(keep - 1))) keep -= 1;
  return text.slice(0, keep) + omissionMarkerText(text.length - keep, locale);
}

/**
 * Keeps the head of an over-long message's text (and tool-result text) up to `capChars` and marks the cut.
 * Tool-call arguments are never cut: they are JSON the provider parses, and a truncated argument
 * string would make the whole request invalid. Their size still uses up the allowance first.
 */
function clipContent(
  content: readonly ContentPart[],
  capChars: number,
  locale: Locale,
): { content: readonly ContentPart[]; clipped: boolean } {
  let allowance = capChars;
  for (const part of content) {
    if (part.type === "tool_call" || part.type === "image") allowance -= partChars(part);
  }
  allowance = Math.max(0, allowance);
  let clipped = false;
  const result = content.map((part): ContentPart => {
    if (part.type !== "text" && part.type !== "tool_result") return part;
    if (part.text.length <= allowance) {
      allowance -= part.text.length;
      return part;
    }
    clipped = true;
    const text = clipText(part.text, allowance, locale);
    allowance = 0;
    return { ...part, text };
  });
  // Nothing cut (the size is all tool calls and images): the stored array goes out as it is.
  return clipped ? { content: result, clipped } : { content, clipped };
}

/** Turns among `messages`: one at the start and one at each user message after the first. */
function countTurns(messages: readonly StoredMessage[]): number {
  let turns = 0;
  let seenUser = false;
  messages.forEach((message, index) => {
    const isUser = message.role === "user";
    if (index === 0 || (isUser && seenUser)) turns += 1;
    seenUser ||= isUser;
  });
  return turns;
}

/** The messages after the compaction boundary, and how many turns the summary covers before it. */
function historyAfterBoundary(session: SessionView): {
  readonly history: readonly StoredMessage[];
  readonly summarisedTurns: number;
} {
  const ordered = isInSeqOrder(session.messages)
    ? session.messages
    : [...session.messages].sort((a, b) => a.seq - b.seq);
  let boundarySeq = Number.NEGATIVE_INFINITY;
  if (session.boundaryMessageId !== null) {
    const boundary = ordered.find((message) => message.messageId === session.boundaryMessageId);
    // The projection keeps deleted messages flagged, so a missing boundary means it is out of step
    // with the compaction events; sending everything would duplicate what the summary covers.
    if (boundary === undefined) {
      throw new FailedPreconditionError(
        `compaction boundary ${session.boundaryMessageId} is not among the session's messages`,
        {
          reason: "compaction_boundary_missing",
          context: { sessionId: session.sessionId },
        },
      );
    }
    boundarySeq = boundary.seq;
  }
  const sent = ordered.filter((message) => !message.deleted && message.role !== "system");
  return {
    history: sent.filter((message) => message.seq > boundarySeq),
    summarisedTurns: countTurns(sent.filter((message) => message.seq <= boundarySeq)),
  };
}

function isInSeqOrder(messages: readonly StoredMessage[]): boolean {
  for (let index = 1; index < messages.length; index += 1) {
    if ((messages[index - 1] as StoredMessage).seq > (messages[index] as StoredMessage).seq) return false;
  }
  return true;
}

function composeSummaryText(
  summary: string | null,
  summarisedTurns: number,
  droppedTurns: number,
  locale: Locale,
): string | null {
  const trimmed = summary?.trim() ?? "";
  const parts: string[] = [];
  if (trimmed !== "") parts.push(sessionSummaryText(trimmed, locale));
  if (droppedTurns > 0) {
    parts.push(
      trimmed !== ""
        ? droppedTurnsAfterSummaryText(summarisedTurns, droppedTurns, locale)
        : droppedTurnsNotSummarisedText(droppedTurns, locale),
    );
  }
  return parts.length === 0 ? null : parts.join("\n\n");
}

/**
 * Builds the history part of the request: non-deleted, non-system messages after the compaction
 * boundary, each clipped to the per-message cap, then the oldest whole turns dropped while the
 * total is over budget. The last turn is always kept, even over budget: without it the model
 * would not see the message it must answer.
 *
 * A turn is a user message and everything up to the next one; anything before the first user
 * message joins the first turn. The window is found from the newest message backwards, so only
 * the messages that are sent are shaped, and a message that needs no clipping goes out with its
 * stored content array (the wire formats reuse what they wrote for it before).
 *
 * @throws ValidationError for a bad context window; FailedPreconditionError when the boundary
 * message is missing.
 */
export function buildHistoryWindow(
  session: SessionView,
  options: { readonly contextWindow: number | null; readonly locale: Locale },
): HistoryWindow {
  const budgetChars = historyBudgetChars(options.contextWindow);
  const thresholdChars = checkpointThresholdChars(options.contextWindow);
  assertCheckpointThresholdBelowBudget(options.contextWindow);
  const capChars = messageCapChars(budgetChars);

  const { history, summarisedTurns } = historyAfterBoundary(session);
  let tailChars = 0;
  let firstUser = -1;
  const sizes: number[] = new Array<number>(history.length);
  history.forEach((stored, index) => {
    const chars = contentChars(stored.content);
    tailChars += chars;
    sizes[index] = chars;
    if (firstUser < 0 && stored.role === "user") firstUser = index;
  });
  const startsTurn = (index: number): boolean =>
    index === 0 || (index > firstUser && firstUser >= 0 && history[index]?.role === "user");

  const clipped = new Map<number, readonly ContentPart[]>();
  const sizeOf = (index: number): number => {
    const size = sizes[index] ?? 0;
    if (size <= capChars) return size;
    const cut = clipContent((history[index] as StoredMessage).content, capChars, options.locale);
    if (!cut.clipped) return size;
    clipped.set(index, cut.content);
    return contentChars(cut.content);
  };

  // The earliest turn start whose suffix fits the budget; suffixes only grow going back, so the
  // walk stops at the first one that does not. The newest turn is kept whatever its size.
  let keptStart = history.length;
  let suffixChars = 0;
  for (let index = history.length - 1; index >= 0; index -= 1) {
    suffixChars += sizeOf(index);
    if (!startsTurn(index)) continue;
    if (keptStart === history.length || suffixChars <= budgetChars) keptStart = index;
    if (suffixChars > budgetChars) break;
  }
  let droppedTurns = 0;
  for (let index = 0; index < keptStart; index += 1) if (startsTurn(index)) droppedTurns += 1;

  const messages: WindowMessage[] = [];
  for (let index = keptStart; index < history.length; index += 1) {
    const stored = history[index] as StoredMessage;
    messages.push({
      role: stored.role,
      content: clipped.get(index) ?? stored.content,
      messageId: stored.messageId,
      seq: stored.seq,
      localDate: stored.localDate,
    });
  }
  return {
    messages,
    summaryText: composeSummaryText(session.summary, summarisedTurns, droppedTurns, options.locale),
    stats: {
      keptMessages: messages.length,
      droppedTurns,
      clippedMessages: messages.filter((_message, offset) => clipped.has(keptStart + offset)).length,
      budgetChars,
      tailChars,
      checkpointThresholdChars: thresholdChars,
      summarisedTurns,
    },
    checkpointDue: tailChars > thresholdChars,
  };
}

/**
 * Puts the summary slot at the HEAD of the window: a new leading text part of the first message
 * when that is a user message, else a synthetic leading user message (localDate "", so the date
 * chain skips it).
 *
 * Deliberately not where seed 002 put it (the last user message): there it moves every turn, so
 * each request rewrites the bytes of the previous turn and the provider's prompt cache, which only
 * matches an append-only prefix, misses from that message on. The head only changes when the
 * summary changes (compaction) or when turns are dropped, and both already change the prefix.
 */
export function attachSummary(
  messages: readonly WindowMessage[],
  summaryText: string | null,
  // The slot's texts are already localised by buildHistoryWindow; the locale is taken so the
  // placement can gain localised framing without changing every caller.
  _locale: Locale,
): WindowMessage[] {
  if (summaryText === null) return [...messages];
  const summaryPart: ContentPart = { type: "text", text: summaryText };
  const [first, ...rest] = messages;
  if (first !== undefined && first.role === "user") {
    return [{ ...first, content: [summaryPart, ...first.content] }, ...rest];
  }
  const synthetic: WindowMessage = {
    role: "user",
    content: [summaryPart],
    messageId: SUMMARY_MESSAGE_ID,
    // Not a stored seq: it sorts before every real message and cannot collide with one.
    seq: -1,
    localDate: "",
  };
  return [synthetic, ...messages];
}

export interface CompactionPlan {
  /** The last message the summary covers: CommitCompaction's boundary_message_id. */
  readonly boundaryMessageId: string;
  /** Turns covered once committed: those the current summary covers and the new ones. */
  readonly turnsToSummarise: number;
}

/**
 * Where a compaction requested now would put the boundary: after the newest message, or before
 * the newest `keepRecentTurns` turns, which then stay in the window after the summary.
 *
 * @throws FailedPreconditionError (nothing_to_compact) when no message after the current boundary
 * would be covered.
 */
export function planCompaction(session: SessionView, keepRecentTurns: number): CompactionPlan {
  const { history } = historyAfterBoundary(session);
  const turnStarts: number[] = [];
  let seenUser = false;
  history.forEach((message, index) => {
    const isUser = message.role === "user";
    if (index === 0 || (isUser && seenUser)) turnStarts.push(index);
    seenUser ||= isUser;
  });
  const keptFrom = keepRecentTurns === 0 ? history.length : (turnStarts[turnStarts.length - keepRecentTurns] ?? 0);
  const boundary = history[keptFrom - 1];
  if (boundary === undefined) {
    throw new FailedPreconditionError(
      `session ${session.sessionId} has nothing to compact: no message after the current boundary${keepRecentTurns > 0 ? ` outside the newest ${keepRecentTurns} turns` : ""}`,
      { reason: "nothing_to_compact", context: { sessionId: session.sessionId } },
    );
  }
  const sent = session.messages.filter((message) => !message.deleted && message.role !== "system");
  return {
    boundaryMessageId: boundary.messageId,
    turnsToSummarise: countTurns(sent.filter((message) => message.seq <= boundary.seq)),
  };
}
