// Seed 000's date wording: calendar dates as YYYY-MM-DD, their weekday, and the <date-change>
// notice put in front of the user message that crosses into a new day. Any byte changed here
// changes the prompt prefix of every running session once (seed 000 §5.4 "部署影响").
//
// The notice is kept byte-for-byte as the seed writes it, ASCII punctuation included.

import { ValidationError } from "@prefix-guard/errors";

/** The languages the notice is written in. */
export type NoticeLocale = "zh-CN" | "en";

const LOCAL_DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;

export interface LocalDateParts {
  readonly year: number;
  readonly month: number;
  readonly day: number;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

function parseLocalDate(localDate: string): LocalDateParts | null {
  const match = LOCAL_DATE_PATTERN.exec(localDate);
  if (match === null) return null;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  return { year, month, day };
}

/** True for a real calendar date written as YYYY-MM-DD (the form the writer stores, seed 000 §3.2). */
export function isLocalDate(value: string): boolean {
  return parseLocalDate(value) !== null;
}

/** @throws ValidationError when `localDate` is not a real YYYY-MM-DD date. */
export function requireLocalDate(field: string, localDate: string): LocalDateParts {
  const parts = parseLocalDate(localDate);
  if (parts === null) throw new ValidationError(field, `must be a calendar date as YYYY-MM-DD, got "${localDate}"`);
  return parts;
}

// Sakamoto's method on the proleptic Gregorian calendar. Pure arithmetic on the date parts: a
// `new Date(...)` would read the host timezone and could shift the day (seed 000 §3.2).
const SAKAMOTO_MONTH_OFFSETS = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4] as const;

/** 0 = Sunday … 6 = Saturday. */
export function weekdayIndex(localDate: string): number {
  const { year, month, day } = requireLocalDate("local_date", localDate);
  const y = month < 3 ? year - 1 : year;
  const offset = SAKAMOTO_MONTH_OFFSETS[month - 1] ?? 0;
  const sum = y + Math.floor(y / 4) - Math.floor(y / 100) + Math.floor(y / 400) + offset + day;
  return ((sum % 7) + 7) % 7;
}

const WEEKDAY_NAMES: Readonly<Record<NoticeLocale, readonly string[]>> = {
  "zh-CN": ["星期日", "星期一", "星期二", "星期三", "星期四", "星期五", "星期六"],
  en: ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"],
};

/** "星期一" / "Monday" for a YYYY-MM-DD date. */
export function formatWeekday(localDate: string, locale: NoticeLocale): string {
  return WEEKDAY_NAMES[locale][weekdayIndex(localDate)] ?? "";
}

/** "2026-10-13(星期二)" / "2026-10-13 (Tuesday)", as used inside the <date-change> tag. */
export function formatDateWithWeekday(localDate: string, locale: NoticeLocale): string {
  const weekday = formatWeekday(localDate, locale);
  return locale === "zh-CN" ? `${localDate}(${weekday})` : `${localDate} (${weekday})`;
}

/**
 * The single-line tag put in front of the first user message of a new day (seed 000 §5.3). It
 * must not start with `<system-notice>`: that prefix marks a message as not a real user message.
 *
 * @throws ValidationError when `newDate` is not a real YYYY-MM-DD date.
 */
export function dateChangeNoticeText(newDate: string, locale: NoticeLocale): string {
  const date = formatDateWithWeekday(newDate, locale);
  if (locale === "zh-CN") {
    return `<date-change>系统提示:当前日期已变更为 ${date}。这是系统注入的提示,不是用户说的话;需要精确到时分秒请用 shell 执行 date。</date-change>`;
  }
  return `<date-change>System notice: the current date has changed to ${date}. This notice was injected by the system; the user did not write it. For the exact time, run date in the shell.</date-change>`;
}
