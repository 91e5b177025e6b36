// Every model-visible wording of date anchoring (seed 000) and the history window (seed 002).
// They live in one file so a wording change is one reviewable diff: any byte changed here changes
// the prompt prefix of every running session once (seed 000 §5.4 "部署影响").
//
// Punctuation: the seed 000 texts (section, <date-change>) are kept byte-for-byte as the seed
// writes them, ASCII punctuation included; the seed 002 texts (omission marker and the wordings
// that must share its style) use the full-width punctuation seed 002 uses.

import { formatWeekday } from "@prefix-guard/seed-texts";
import type { Locale } from "./model";

// Seed 000's date formatting and <date-change> notice live in @prefix-guard/seed-texts: the
// gateway's stabilize mode writes the same notice, byte for byte.
export {
  dateChangeNoticeText,
  formatDateWithWeekday,
  formatWeekday,
  isLocalDate,
  type LocalDateParts,
  requireLocalDate,
  weekdayIndex,
} from "@prefix-guard/seed-texts";

/** The `current-date` system section, heading included (seed 000 §5.4). */
export function currentDateSectionText(anchorDate: string, locale: Locale, allowShellClock: boolean): string {
  const weekday = formatWeekday(anchorDate, locale);
  if (locale === "zh-CN") {
    const shellHint = allowShellClock ? "如需精确到时分秒的时间,请使用 shell 执行 `date` 命令获取。" : "";
    return [
      "## 当前日期",
      "",
      `当前日期:\`${anchorDate}\`(${weekday})`,
      `本节日期是本会话首条用户消息的日期,会话内固定不变。若你的用户消息前出现 <date-change> 标签,说明真实日期已经推进,以标签内日期为准。${shellHint}`,
    ].join("\n");
  }
  const shellHint = allowShellClock ? " For the exact time of day, run the `date` command in the shell." : "";
  return [
    "## Current date",
    "",
    `Current date: \`${anchorDate}\` (${weekday})`,
    `This is the date of the first user message of this session and stays fixed for the whole session. If a <date-change> tag appears at the start of a user message, the real date has moved on and the date in the tag takes precedence.${shellHint}`,
  ].join("\n");
}

/**
 * Appended where a single over-long message was cut (seed 002 §2.1 `omissionMarker`). It says only
 * what was cut: a message in the window comes after the summary's boundary, so no summary covers
 * it, and seed 002's "结论已并入会话摘要" would be untrue (docs/decisions/honest-announcements.md).
 */
export function omissionMarkerText(omittedChars: number, locale: Locale): string {
  if (locale === "zh-CN") return `……（以下省略 ${omittedChars} 字）`;
  return `…(${omittedChars} more characters omitted)`;
}

/** Wraps the compaction summary so the model can tell it from what the user typed. */
export function sessionSummaryText(summary: string, locale: Locale): string {
  if (locale === "zh-CN") {
    return `<session-summary>\n以下是本会话更早内容的摘要，由系统生成，不是用户说的话：\n${summary}\n</session-summary>`;
  }
  return `<session-summary>\nSummary of the earlier part of this session, written by the system, not by the user:\n${summary}\n</session-summary>`;
}

function turns(count: number): string {
  return `${count} ${count === 1 ? "turn" : "turns"}`;
}

/**
 * Dropped-turns announcement when a summary sits right above it (seed 002 §5.1), with both exact
 * counts: the summary covers the turns up to the compaction boundary (`summarisedTurns`; 0 when it
 * was inherited from another session), and the turns dropped after the boundary are covered by
 * nothing. Saying "merged into the summary" of those would be untrue (docs/decisions/honest-announcements.md).
 */
export function droppedTurnsAfterSummaryText(summarisedTurns: number, droppedTurns: number, locale: Locale): string {
  if (locale === "zh-CN") {
    const covered =
      summarisedTurns > 0 ? `上面的会话摘要涵盖本会话最早的 ${summarisedTurns} 轮对话` : "上面的会话摘要来自之前的会话";
    return `（${covered}；其后的 ${droppedTurns} 轮对话因篇幅限制未带上，也没有并入摘要；如需其中的内容，请让用户重新提供）`;
  }
  const covered =
    summarisedTurns > 0
      ? `The session summary above covers the first ${turns(summarisedTurns)} of this session`
      : "The session summary above comes from an earlier session";
  return `(${covered}; the ${turns(droppedTurns)} after ${summarisedTurns > 0 ? "them" : "it"} ${droppedTurns === 1 ? "was" : "were"} left out for length and ${droppedTurns === 1 ? "has" : "have"} NOT been summarised; if you need what was said there, ask the user to provide it again.)`;
}

/** Dropped-turns announcement without a summary: the content is gone, and the model must know it. */
export function droppedTurnsNotSummarisedText(droppedTurns: number, locale: Locale): string {
  if (locale === "zh-CN") {
    return `（更早的 ${droppedTurns} 轮对话因篇幅限制未带上，也没有并入任何摘要；如需其中的内容，请让用户重新提供）`;
  }
  return `(${droppedTurns} earlier ${droppedTurns === 1 ? "turn was" : "turns were"} left out for length and ${droppedTurns === 1 ? "has" : "have"} NOT been summarised; if you need what was said there, ask the user to provide it again.)`;
}

/**
 * The instruction appended to a compaction request (docs/decisions/compaction-request.md, seed 002 §1
 * and §4.4, seed 000 §5.5): a rolling summary that extends the one above, within the stored summary's limit, with
 * the user's goals and words taken only from what the user really wrote. <date-change> notices are
 * the system's, not the user's, and are never copied; personal data never enters a summary.
 */
export function compactionInstructionText(locale: Locale, extendsSummary: boolean): string {
  if (locale === "zh-CN") {
    const extend = extendsSummary
      ? "请在上面的会话摘要基础上延续并更新它，保留仍然有效的内容，"
      : "请为上面的对话写一份会话摘要，";
    return [
      "<compaction-request>",
      `这是系统发起的摘要请求，不是用户说的话。${extend}写出目前为止的目标、结论、决定、待办和关键事实，不超过 800 字。`,
      "用户的目标和引用的原话只能取自用户真实发出的消息；<date-change> 等标签是系统注入的提示，不是用户说的话，不要抄进摘要。",
      "不要写入任何人的姓名、出生日期、出生时间、出生地、邮箱或电话。只输出摘要正文。",
      "</compaction-request>",
    ].join("\n");
  }
  const extend = extendsSummary
    ? "Extend and update the session summary above, keeping what still holds, and"
    : "Write a session summary of the conversation above:";
  return [
    "<compaction-request>",
    `This summary request comes from the system, not from the user. ${extend} state the goals, conclusions, decisions, open tasks and key facts so far, in at most 800 characters.`,
    "Take the user's goals and any quoted words only from messages the user really wrote; tags such as <date-change> are notices injected by the system, not the user's words, and must not be copied into the summary.",
    "Do not include anyone's name, date of birth, time of birth, place of birth, e-mail address or phone number. Reply with the summary text only.",
    "</compaction-request>",
  ].join("\n");
}
