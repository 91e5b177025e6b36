// The volatile_spans rule: seed 000 (date anchoring) applied to a body the gateway did not build.
//
// 1. Pinning. Every match of a volatile pattern in the system prompt is an occurrence, known by its
//    pattern, the text before it on its line in the pinned text (at most 32 characters) and its
//    ordinal among occurrences with that same key. The first value seen of each occurrence is kept (state.pins) and written in its
//    place on every later request of the session, so the system prompt stays byte-identical when the
//    harness writes a new date into it at midnight. Keying by the text before a span, not by its
//    index, keeps a span added earlier in the prompt from shifting every pin onto the wrong value:
//    a span whose line changed right before it is a new occurrence, pinned afresh, never replaced.
//
// 2. Notices. The model must still learn the real date. Seed 000 puts a <date-change> tag in front
//    of the first user message of each new day, on the request copy only, and re-renders it
//    identically every turn. Here a message's day is the day the system prompt stated when that
//    message was first sent, which only the request that carried it new can tell: so the notice is
//    written on the request's final message when it is a message the user wrote (not tool output:
//    inside an agent loop the notice waits for the next user turn, as seed 000 §2.2 has it), and
//    remembered by index and identity (state.notices). Every later request that re-sends the message
//    gets the same notice text again, so the history stays byte-stable. A notice is due when a
//    pinned span's date changed and the date the prompt really states differs from the date the
//    model was last told: the last notice earlier in this request's history, else the pinned date.
//
// Only changed values whose dates differ announce anything; other patterns (a time of day) are
// pinned silently. Everything is computed from the request and the state: the same request with the
// same state gives the same bytes.

import { dateChangeNoticeText, type NoticeLocale } from "@prefix-guard/seed-texts";
import type { JsonRecord } from "../json-record";
import type { RouteName } from "../routes";
import {
  conversationKey,
  conversationOf,
  isRealUserMessage,
  messageIdentity,
  prependText,
  systemSlots,
  withMember,
} from "./body";
import {
  type DateChangeNotice,
  MAX_NOTICES,
  MAX_PINNED_SPANS,
  MAX_PINNED_VALUE_CHARS,
  type PinnedSpan,
  type SessionStabilizationState,
} from "./state";
import { dateStatedIn, type VolatilePattern } from "./volatile-patterns";

/** GATEWAY_NOTICE_LOCALE: a fixed language, or `auto` (see noticeLocaleFor). */
export type NoticeLocaleSetting = NoticeLocale | "auto";

const CONTEXT_CHARS = 32;
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/gu;
const LETTER = /\p{L}/gu;

/**
 * The notice's language: the setting, or with `auto` zh-CN when most letters of the system prompt
 * are CJK characters (Han, kana, Hangul; the notice exists in Chinese and English only), else en.
 */
export function noticeLocaleFor(systemText: string, setting: NoticeLocaleSetting): NoticeLocale {
  if (setting !== "auto") return setting;
  const letters = systemText.match(LETTER)?.length ?? 0;
  const cjk = systemText.match(CJK)?.length ?? 0;
  return letters > 0 && cjk * 2 > letters ? "zh-CN" : "en";
}

interface Occurrence {
  readonly pattern: number;
  readonly start: number;
  readonly end: number;
}

/** Non-overlapping matches of all patterns in `text`, leftmost first (the earlier pattern on a tie). */
export function occurrencesIn(text: string, patterns: readonly VolatilePattern[]): Occurrence[] {
  const found: Occurrence[] = [];
  patterns.forEach((pattern, index) => {
    for (const match of text.matchAll(pattern.regex)) {
      if (match[0].length > 0) found.push({ pattern: index, start: match.index, end: match.index + match[0].length });
    }
  });
  found.sort((a, b) => a.start - b.start || a.pattern - b.pattern);
  const kept: Occurrence[] = [];
  let reached = 0;
  for (const occurrence of found) {
    if (occurrence.start < reached) continue;
    kept.push(occurrence);
    reached = occurrence.end;
  }
  return kept;
}

export interface PinnedSystem {
  /** Per system slot, its text with pinned values written in. */
  readonly texts: readonly string[];
  readonly pins: readonly PinnedSpan[];
  /** Whether any span was written back to its first value. */
  readonly replaced: boolean;
  /** The first span whose stated date differs from its pinned value's: both dates. */
  readonly dateChange: { readonly pinned: string; readonly real: string } | null;
}

/** Step 1 over the system prompt's texts (one per slot, in cache order). */
export function pinVolatileSpans(
  texts: readonly string[],
  patterns: readonly VolatilePattern[],
  pins: readonly PinnedSpan[],
): PinnedSystem {
  const known = new Map(pins.map((pin) => [pin.key, pin.value]));
  const added: PinnedSpan[] = [];
  const ordinals = new Map<string, number>();
  let replaced = false;
  let dateChange: PinnedSystem["dateChange"] = null;
  // The pinned text so far, across slots: what an occurrence's key is read from.
  let written = "";
  const out = texts.map((text) => {
    let result = "";
    let at = 0;
    for (const occurrence of occurrencesIn(text, patterns)) {
      result += text.slice(at, occurrence.start);
      const before = (written + result).slice(-CONTEXT_CHARS);
      const context = before.slice(before.lastIndexOf("\n") + 1);
      const base = `${occurrence.pattern}\u0000${context}`;
      const ordinal = ordinals.get(base) ?? 0;
      ordinals.set(base, ordinal + 1);
      const key = `${base}\u0000${ordinal}`;
      const real = text.slice(occurrence.start, occurrence.end);
      let value = known.get(key);
      if (value === undefined) {
        value = real;
        if (pins.length + added.length < MAX_PINNED_SPANS && real.length <= MAX_PINNED_VALUE_CHARS) {
          known.set(key, real);
          added.push({ key, value: real });
        }
      } else if (value !== real) {
        replaced = true;
        if (dateChange === null) {
          const pinned = dateStatedIn(value);
          const stated = dateStatedIn(real);
          if (pinned !== null && stated !== null && pinned !== stated) dateChange = { pinned, real: stated };
        }
      }
      result += value;
      at = occurrence.end;
    }
    result += text.slice(at);
    written += `${result}\n`;
    return result;
  });
  return { texts: out, pins: added.length === 0 ? pins : [...pins, ...added], replaced, dateChange };
}

export interface NoticeInput {
  /** This request's date change (pinVolatileSpans), or null: without one no new notice is written. */
  readonly dateChange: PinnedSystem["dateChange"];
  readonly notices: readonly DateChangeNotice[];
  /** The locale of a notice written now (asked only then). */
  readonly locale: () => NoticeLocale;
}

export interface NoticesApplied {
  /** The body with the notices in front of their messages, or the same body when none applies. */
  readonly body: JsonRecord;
  readonly notices: readonly DateChangeNotice[];
  readonly applied: boolean;
}

/** Step 2: re-renders the remembered notices and writes a new one on the final message when due. */
export function applyDateChangeNotices(route: RouteName, body: JsonRecord, input: NoticeInput): NoticesApplied {
  const unchanged: NoticesApplied = { body, notices: input.notices, applied: false };
  // A string Responses `input` is one user message, the final one.
  const items: readonly unknown[] | null =
    route === "openai_responses" && typeof body.input === "string"
      ? [{ role: "user", content: body.input }]
      : conversationOf(route, body);
  if (items === null || items.length === 0) return unchanged;
  const finalIndex = items.length - 1;

  const identities = new Map<number, string>();
  const identityAt = (index: number): string | null => {
    const item = items[index];
    if (!isRealUserMessage(route, item)) return null;
    let identity = identities.get(index);
    if (identity === undefined) {
      identity = messageIdentity(item);
      identities.set(index, identity);
    }
    return identity;
  };

  // Where each remembered notice goes: the message at its index if it is still that message; else,
  // when the history moved (a client trimming old turns), the one earlier message with its identity.
  const placed = new Map<number, DateChangeNotice>();
  for (const notice of input.notices) {
    let index: number | null = identityAt(notice.index) === notice.message ? notice.index : null;
    if (index === null) {
      const matches: number[] = [];
      for (let at = 0; at < finalIndex; at += 1) if (identityAt(at) === notice.message) matches.push(at);
      if (matches.length === 1) index = matches[0] ?? null;
    }
    if (index !== null && !placed.has(index)) placed.set(index, notice);
  }

  let notices = input.notices;
  const change = input.dateChange;
  if (change !== null && !placed.has(finalIndex) && identityAt(finalIndex) !== null) {
    // What the model was last told: the latest notice earlier in this history, else the pinned date.
    let toldAt = -1;
    let told = change.pinned;
    for (const [index, notice] of placed) {
      if (index > toldAt) {
        toldAt = index;
        told = notice.date;
      }
    }
    if (change.real !== told) {
      const notice: DateChangeNotice = {
        index: finalIndex,
        message: identityAt(finalIndex) as string,
        date: change.real,
        text: dateChangeNoticeText(change.real, input.locale()),
      };
      placed.set(finalIndex, notice);
      notices = [...input.notices, notice].slice(-MAX_NOTICES);
    }
  }
  if (placed.size === 0) return unchanged;

  if (route === "openai_responses" && typeof body.input === "string") {
    const notice = placed.get(0);
    const content = notice === undefined ? null : prependText(route, body.input, notice.text);
    return content === null ? unchanged : { body: withMember(body, "input", content), notices, applied: true };
  }
  const copy = [...items];
  let applied = false;
  for (const [index, notice] of placed) {
    const message = items[index] as JsonRecord;
    const content = prependText(route, message.content, notice.text);
    if (content === null) continue;
    copy[index] = { ...message, content };
    applied = true;
  }
  return applied ? { body: withMember(body, conversationKey(route), copy), notices, applied } : unchanged;
}

export interface VolatileSpansResult {
  readonly body: JsonRecord;
  readonly fired: boolean;
  readonly state: SessionStabilizationState;
}

/** The rule: pins the system prompt's volatile spans, then places the date-change notices. */
export function stabilizeVolatileSpans(
  route: RouteName,
  body: JsonRecord,
  state: SessionStabilizationState,
  patterns: readonly VolatilePattern[],
  localeSetting: NoticeLocaleSetting,
): VolatileSpansResult {
  if (patterns.length === 0) return { body, fired: false, state };
  const slots = systemSlots(route, body);
  const pinned = pinVolatileSpans(
    slots.map((slot) => slot.text),
    patterns,
    state.pins,
  );
  let next = body;
  if (pinned.replaced) {
    // Slot writers read the body they are given, so each one sees the previous writes.
    slots.forEach((slot, index) => {
      const text = pinned.texts[index] ?? slot.text;
      if (text !== slot.text) next = slot.write(next, text);
    });
  }
  const noticed = applyDateChangeNotices(route, next, {
    dateChange: pinned.dateChange,
    notices: state.notices,
    locale: () => noticeLocaleFor(pinned.texts.join("\n"), localeSetting),
  });
  return {
    body: noticed.body,
    fired: pinned.replaced || noticed.applied,
    state:
      noticed.notices === state.notices && pinned.pins === state.pins
        ? state
        : { pins: pinned.pins, notices: noticed.notices },
  };
}
