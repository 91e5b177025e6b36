// Volatile spans: the parts of a system prompt that change on their own (today's date, a clock)
// while the rest stays, breaking the provider's prefix cache from there on. GATEWAY_VOLATILE_PATTERNS
// lists them as a JSON array of regular expressions (JavaScript syntax, compiled with the `u` flag);
// the entry "@date" stands for the date pattern shipped with the gateway, and is the default.
//
// The shipped date pattern matches two forms and nothing else:
// - ISO dates, YYYY-MM-DD, not inside a longer run of digits ("Today's date is 2026-12-04",
//   the date part of "2026-12-04T10:31:00Z");
// - JavaScript's Date.prototype.toDateString() and the `date` command's day: weekday and month
//   abbreviated in English, then day and year ("Fri Dec 04 2026", "Mon Dec  4 2026").
// Anything else a harness writes (a time of day, another language's date) needs a pattern of its own.

import { ValidationError } from "@prefix-guard/errors";
import { isLocalDate } from "@prefix-guard/seed-texts";

export const BUILTIN_DATE_PATTERN_NAME = "@date";

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"] as const;
const ISO_DATE_SOURCE = String.raw`(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)`;
const LONG_DATE_SOURCE = String.raw`\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:${MONTHS.join("|")}) {1,2}\d{1,2} \d{4}\b`;

/** The shipped date pattern's source. */
export const BUILTIN_DATE_PATTERN_SOURCE = `${ISO_DATE_SOURCE}|${LONG_DATE_SOURCE}`;

export const DEFAULT_VOLATILE_PATTERNS_SETTING = JSON.stringify([BUILTIN_DATE_PATTERN_NAME]);

const MAX_PATTERNS = 16;
const MAX_PATTERN_LENGTH = 500;

export interface VolatilePattern {
  /** As configured ("@date" for the shipped one): names the pattern in errors, never content. */
  readonly name: string;
  /** Global and unicode; use a fresh lastIndex per scan (matchAll does). */
  readonly regex: RegExp;
}

/** @throws ValidationError naming the entry when it does not compile or can match nothing at all. */
function compilePattern(entry: string, index: number): VolatilePattern {
  const field = `GATEWAY_VOLATILE_PATTERNS[${index}]`;
  const source = entry === BUILTIN_DATE_PATTERN_NAME ? BUILTIN_DATE_PATTERN_SOURCE : entry;
  if (source.length === 0 || source.length > MAX_PATTERN_LENGTH)
    throw new ValidationError(field, `must be 1–${MAX_PATTERN_LENGTH} characters`);
  let regex: RegExp;
  try {
    regex = new RegExp(source, "gu");
  } catch (error) {
    throw new ValidationError(field, `is not a regular expression: ${error instanceof Error ? error.message : ""}`);
  }
  // A pattern matching the empty string would pin nothing and match everywhere.
  if (new RegExp(source, "u").test("")) throw new ValidationError(field, "must not match the empty string");
  return { name: entry, regex };
}

/**
 * GATEWAY_VOLATILE_PATTERNS: a JSON array of 0–16 regular expressions ("@date" = the shipped date
 * pattern). `[]` turns the rule off.
 *
 * @throws ValidationError naming the setting or the entry.
 */
export function parseVolatilePatterns(setting: string): VolatilePattern[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(setting);
  } catch {
    throw new ValidationError(
      "GATEWAY_VOLATILE_PATTERNS",
      'must be a JSON array of regular expressions, e.g. ["@date"]',
    );
  }
  if (!Array.isArray(parsed) || parsed.length > MAX_PATTERNS || parsed.some((entry) => typeof entry !== "string"))
    throw new ValidationError(
      "GATEWAY_VOLATILE_PATTERNS",
      `must be a JSON array of at most ${MAX_PATTERNS} strings, e.g. ["@date"]`,
    );
  return (parsed as string[]).map(compilePattern);
}

const DATE_IN_TEXT = new RegExp(BUILTIN_DATE_PATTERN_SOURCE, "u");

/**
 * The calendar date a span states, as YYYY-MM-DD: its first ISO or long-form date (the shipped
 * pattern's forms), or null when it states none or an impossible one ("2026-02-30").
 */
export function dateStatedIn(span: string): string | null {
  const match = DATE_IN_TEXT.exec(span);
  if (match === null) return null;
  const text = match[0];
  let date: string;
  if (/^\d/.test(text)) date = text;
  else {
    const [, month = "", day = "", year = ""] = text.split(/ +/);
    date = `${year}-${String(MONTHS.indexOf(month as (typeof MONTHS)[number]) + 1).padStart(2, "0")}-${day.padStart(2, "0")}`;
  }
  return isLocalDate(date) ? date : null;
}
