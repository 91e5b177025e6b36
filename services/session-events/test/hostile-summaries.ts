// The worst shapes a summary can take for the scrubber: the runs and alternations
// that made its old regular expressions backtrack, at the largest size CommitCompaction accepts.
// Shared by the scrubber's unit test (work bounded by the input length), the CommitCompaction
// integration test and the bad-input table (each is accepted and completes).

import { MAX_SUMMARY_INPUT_CHARS } from "../src/domain/limits";

export interface HostileSummary {
  readonly name: string;
  readonly summary: string;
  /** Personal terms the harness passes with it (CommitCompaction's `personal_terms`). */
  readonly personalTerms: readonly string[];
}

/** `unit` repeated (and `head` before it) up to exactly `chars` code points. */
export function fill(chars: number, unit: string, head = ""): string {
  const units = [...unit];
  const out = [...head];
  for (let i = 0; out.length < chars; i++) out.push(units[i % units.length] ?? "");
  return out.slice(0, chars).join("");
}

const HAN_DIGITS = "甲乙丙丁戊己庚辛壬癸";

/** A distinct Han name for each `index` (名字甲, 名字乙, …, 名字乙甲 …): what "我叫…" yields as a term. */
export function selfStatedName(index: number): string {
  return `名字${[...String(index)].map((digit) => HAN_DIGITS[Number(digit)]).join("")}`;
}

/** Each shape at `chars` code points (default: the most CommitCompaction accepts). */
export function hostileSummaries(chars = MAX_SUMMARY_INPUT_CHARS): HostileSummary[] {
  const half = Math.floor(chars / 2);
  const shapes: [name: string, summary: string][] = [
    // The shape that made the old e-mail pattern backtrack: one local part that every start position
    // scanned to its end (docs/decisions/summary-scrubbing.md).
    ["e-mail: digits @ letters .1", `${"1".repeat(half)}@${"a".repeat(chars - half - 3)}.1`],
    ["e-mail: letters @ dotted labels", fill(chars, "a.", "x@")],
    ["e-mail: @ dashes", fill(chars, "-", "a@")],
    ["e-mail: a@b.cc1 repeated", fill(chars, "a@b.cc1")],
    ["digits", fill(chars, "1")],
    ["dots", fill(chars, ".")],
    ["dashes", fill(chars, "-")],
    ["underscores", fill(chars, "_")],
    ["at signs", fill(chars, "@")],
    ["dot dash", fill(chars, ".-")],
    ["at dot", fill(chars, "@.")],
    ["underscore at dash dot", fill(chars, "_@-.")],
    ["digit dash", fill(chars, "1-")],
    ["digit dot", fill(chars, "1.")],
    ["digit space", fill(chars, "1 ")],
    // Digit groups an international pattern could cut in thousands of ways.
    ["+ and 28 digits", fill(chars, `+${"1".repeat(28)} `)],
    ["+ and bracketed groups", fill(chars, "+1(1)(1)(1)(1)(1)(1)(1)1 ")],
    // A lead word and a run of spaces the old pattern split between two \s*.
    ["姓名 and spaces", fill(chars, " ", "姓名")],
    ["籍贯 and ideographic spaces", fill(chars, "\u3000", "籍贯")],
    ["农历 and spaces", fill(chars, " ", "农历")],
    ["birthplace and spaces", fill(chars, " ", "birthplace")],
    ["Mr and capitals", fill(chars, "A", "Mr ")],
    ["wife and hyphenated capitals", fill(chars, "Ab-", "wife ")],
    ["Mr A and combining marks", fill(chars, "\u0301", "Mr A")],
    // CJK mixed with the same runs.
    ["CJK: names after leads", fill(chars, "用户王伟说，")],
    ["CJK: 我叫 and one surname", fill(chars, "王", "我叫")],
    ["CJK: surname characters of ordinary words", fill(chars, "高")],
    ["CJK: birth sentences with years", fill(chars, "出生1990年")],
    ["CJK: dates and times", fill(chars, "1990年5月12日下午两点，")],
    ["CJK: e-mail runs between Han", fill(chars, "联系1.1.1.1@")],
    ["CJK: digits and phone separators", fill(chars, "电话138 1234 5678-")],
    ["CJK: spaced Han", fill(chars, "王 伟 ")],
    ["CJK: emoji and names", fill(chars, "😀同事李娜和张敏")],
    ["markers and spaces", fill(chars, "[已移除] ")],
  ];
  const termShapes: HostileSummary[] = [
    // What a user's own messages can make the session's terms: thousands of them (at most 20
    // characters each), all tried against the summary.
    {
      name: "terms: 5,000 distinct self-stated names",
      summary: fill(chars, "用户说名字甲乙丙，"),
      personalTerms: Array.from({ length: 5_000 }, (_, i) => selfStatedName(i)),
    },
    {
      name: "terms: a, aa, … up to 20 letters",
      summary: fill(chars, "a"),
      personalTerms: Array.from({ length: 20 }, (_, i) => "a".repeat(i + 1)),
    },
    // The most the harness may pass: 100 terms of 200 characters, each almost matching everywhere.
    {
      name: "terms: 100 × 200 characters, almost everywhere",
      summary: fill(chars, "a"),
      personalTerms: Array.from({ length: 100 }, (_, i) => `${"a".repeat(190)}b${String(i).padStart(9, "0")}`),
    },
    {
      name: "terms: 100 phone numbers in a digit run",
      summary: fill(chars, "1"),
      personalTerms: Array.from({ length: 100 }, (_, i) => `${"1".repeat(14)}${i % 10}`),
    },
    {
      name: "terms: spaced words in spaced text",
      summary: fill(chars, "a "),
      personalTerms: Array.from({ length: 100 }, (_, i) => `${"a ".repeat(95)}b${i}`),
    },
  ];
  return [...shapes.map(([name, summary]) => ({ name, summary, personalTerms: [] })), ...termShapes];
}
