import type { ContentPart } from "@prefix-guard/proto/common/v1/common";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { SUMMARY_MAX_CHARS } from "./limits";
import { truncateCodePoints } from "./text";

/**
 * Summary scrubbing (seed 002 §4.4): a stored summary must not carry birth dates, birth times, birth
 * places, names or contact data, because it is copied into later prompts and into continued sessions.
 *
 * Heuristics, in the order applied (each hit becomes SCRUB_MARKER; adjacent markers collapse):
 * 1. emails;
 * 2. phone numbers: CN mobiles 1[3-9]x xxxx xxxx (optional +86/0086, space or dash separators),
 *    international "+<country> …" with 7–15 digits, CN landlines (0xx-xxxxxxxx, (0xx) …),
 *    400/800 numbers and US-style ddd-ddd-dddd;
 * 3. full calendar dates, anywhere (in this product a full date in a consultation is almost always a
 *    birth date): 1990-05-12, 1990/5/12, 1990.5.12, 12/05/1990, 1990年5月12日, 一九九〇年五月十二日,
 *    May 12, 1990, 12 May 1990, and 农历 month/day; a time directly after a date goes with it;
 * 4. within a sentence (split at 。！？!?；;\n) that mentions birth (出生/生于/生日/降生/born/birth):
 *    clock times (14:30, 2pm, 下午两点, 14点30分), 时辰 (子时 … 亥时), year-months (1990年5月), years
 *    (1990年) and month-days (5月12日);
 * 5. the place or name after a birth-place / name phrase in the summary itself: 出生于/出生在/
 *    出生地：/生于/籍贯：/姓名：/名字是/名叫/用户叫/我叫, "born in", "birthplace:", "name is", "named";
 * 6. every personal term found in the session's user messages (extractPersonalTerms); terms with
 *    Latin letters only match as whole words, case-insensitively; CJK terms match as substrings.
 * Finally the text is capped at SUMMARY_MAX_CHARS code points, without leaving half a marker.
 */
export const SCRUB_MARKER = "[已移除]";

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;

const PHONES: readonly RegExp[] = [
  /(?<![\d+])(?:(?:\+|00)86[\s-]?)?1[3-9]\d(?:[\s-]?\d{4}){2}(?!\d)/g,
  /(?<![\w+])\+\d{1,3}(?:[\s.-]?\(?\d{1,4}\)?){2,6}(?!\d)/g,
  /(?<!\d)(?:\(0\d{2,3}\)\s?|0\d{2,3}[\s-])\d{7,8}(?!\d)/g,
  /(?<!\d)[48]00[\s-]?\d{3}[\s-]?\d{4}(?!\d)/g,
  /(?<!\d)\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}(?!\d)/g,
];

const YEAR = String.raw`(?:1[89]|20)\d{2}`;
const MONTH = "(?:0?[1-9]|1[0-2])";
const DAY = String.raw`(?:0?[1-9]|[12]\d|3[01])`;
const CN_DIGIT = "〇零一二三四五六七八九";
const CN_MONTH = "[正一二三四五六七八九十冬腊]{1,3}月";
const CN_DAY = "[初一二三四五六七八九十廿卅]{1,3}[日号]?";
const EN_MONTH =
  "(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)";

const DAY_PERIOD = "(?:凌晨|早上|早晨|上午|中午|下午|傍晚|晚上|夜里|半夜)";
const CN_HOUR = `[${CN_DIGIT}两十]{1,3}`;
const CN_MINUTES = `(?:[${CN_DIGIT}十]{1,3}\\s*分|半|一刻|三刻)`;
// Chinese-numeral hours need a day period or minutes, so "有一点担心" is not read as a time.
const CLOCK_TIME = [
  String.raw`\d{1,2}\s*[:：]\s*\d{2}(?:\s*[:：]\s*\d{2})?(?:\s*[AaPp]\.?[Mm]\.?)?`,
  String.raw`\d{1,2}\s*[AaPp]\.?[Mm]\.?`,
  String.raw`(?:${DAY_PERIOD}\s*)?\d{1,2}\s*[点时](?:\s*\d{1,2}\s*分?|半|一刻|三刻)?`,
  String.raw`${DAY_PERIOD}\s*${CN_HOUR}\s*[点时]${CN_MINUTES}?`,
  String.raw`${CN_HOUR}\s*[点时]\s*${CN_MINUTES}`,
].join("|");

const FULL_DATES = [
  String.raw`(?<!\d)${YEAR}\s*[-/.]\s*${MONTH}\s*[-/.]\s*${DAY}(?!\d)`,
  String.raw`(?<!\d)${DAY}\s*[-/.]\s*${DAY}\s*[-/.]\s*${YEAR}(?!\d)`,
  String.raw`(?<!\d)${YEAR}\s*年\s*${MONTH}\s*月\s*${DAY}\s*[日号]`,
  `[${CN_DIGIT}]{4}年${CN_MONTH}${CN_DAY}`,
  `(?:农历|阴历)\\s*(?:[${CN_DIGIT}]{4}年|${YEAR}年)?\\s*(?:闰)?${CN_MONTH}${CN_DAY}`,
  String.raw`\b${EN_MONTH}\.?\s+${DAY}(?:st|nd|rd|th)?,?\s+${YEAR}\b`,
  String.raw`\b${DAY}(?:st|nd|rd|th)?\s+(?:of\s+)?${EN_MONTH}\.?,?\s+${YEAR}\b`,
].join("|");

// A time right after a date (1990-05-12 14:30, 1990年5月12日下午两点) is the birth time: it goes with the date.
const DATE_WITH_TIME = new RegExp(String.raw`(?:${FULL_DATES})(?:[\sT,，]*(?:${CLOCK_TIME}))?`, "gi");

const BIRTH_CONTEXT = /出生|生于|生日|降生|诞生|born|birth/i;
const BIRTH_CLAUSE_FRAGMENTS = new RegExp(
  [
    CLOCK_TIME,
    "[子丑寅卯辰巳午未申酉戌亥]时",
    String.raw`(?<!\d)${YEAR}\s*年(?:\s*${MONTH}\s*月)?`,
    String.raw`(?<!\d)${MONTH}\s*月\s*${DAY}\s*[日号]`,
    `[${CN_DIGIT}]{4}年(?:${CN_MONTH})?`,
    String.raw`\b${EN_MONTH}\.?\s+(?:${DAY}(?:st|nd|rd|th)?|${YEAR})\b`,
    String.raw`(?<!\d)${YEAR}(?!\d)`,
  ].join("|"),
  "gi",
);
const SENTENCE = /[^。！？!?；;\n]+[。！？!?；;\n]*/g;

const TERM_RUN = "[\\p{Script=Han}\\p{L}·]{1,40}";
const ZH_SUMMARY_PHRASE = new RegExp(
  `(出生于|出生在|出生地\\s*[:：是为]?|生于|籍贯\\s*[:：是为]?|姓名\\s*[:：是为]?|名字(?:是|叫)|名叫|用户叫|我叫|住在|居住在|现居)\\s*(${TERM_RUN})`,
  "gu",
);
const EN_SUMMARY_PHRASE =
  /(\b(?:born in|birthplace(?:\s*:|\s+is)?|name is|named|lives? in))\s+([A-Za-z][A-Za-z'’-]*(?:\s+[A-Za-z][A-Za-z'’-]*){0,3})/giu;

/**
 * Removes personal data from a summary and caps it; see the heuristics above. `personalTerms` are the
 * names and places the user stated about themselves in this session.
 */
export function scrubSummary(summary: string, personalTerms: readonly string[]): string {
  let text = summary.replace(EMAIL, SCRUB_MARKER);
  for (const phone of PHONES) text = text.replace(phone, (match) => (isPhoneDigitCount(match) ? SCRUB_MARKER : match));
  text = text.replace(DATE_WITH_TIME, SCRUB_MARKER);
  text = text.replace(SENTENCE, (sentence) =>
    BIRTH_CONTEXT.test(sentence) ? sentence.replace(BIRTH_CLAUSE_FRAGMENTS, SCRUB_MARKER) : sentence,
  );
  text = text.replace(
    ZH_SUMMARY_PHRASE,
    (_match, lead: string, run: string) => `${lead}${SCRUB_MARKER}${run.slice(cutAtStopWords(run).length)}`,
  );
  text = text.replace(EN_SUMMARY_PHRASE, (match, lead: string, run: string) => {
    const term = englishTerm(run);
    return term === undefined ? match : `${lead} ${SCRUB_MARKER}${run.slice(term.length)}`;
  });
  for (const term of [...new Set(personalTerms.map((t) => t.trim()).filter((t) => t.length > 0))].sort(
    (a, b) => b.length - a.length,
  )) {
    text = text.replace(termPattern(term), SCRUB_MARKER);
  }
  text = text.replace(/\[已移除\](?:\s*\[已移除\])+/g, SCRUB_MARKER);
  return capSummary(text);
}

function isPhoneDigitCount(match: string): boolean {
  const digits = match.replace(/\D/g, "").length;
  return digits >= 7 && digits <= 15;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function termPattern(term: string): RegExp {
  const escaped = escapeRegExp(term);
  // Latin names must not eat parts of other words ("Ann" in "Annual"); CJK has no word boundaries.
  return /^[\p{Script=Latin}\s'’.-]+$/u.test(term)
    ? new RegExp(`(?<![\\p{L}\\p{N}])${escaped}(?![\\p{L}\\p{N}])`, "giu")
    : new RegExp(escaped, "gu");
}

/** Caps at SUMMARY_MAX_CHARS code points; a marker cut in half is dropped rather than left as "[已移". */
export function capSummary(text: string): string {
  const capped = truncateCodePoints(text, SUMMARY_MAX_CHARS);
  if (capped.length === text.length) return capped;
  const open = capped.lastIndexOf("[");
  if (open >= 0) {
    const tail = capped.slice(open);
    if (tail.length < SCRUB_MARKER.length && SCRUB_MARKER.startsWith(tail)) return capped.slice(0, open);
  }
  return capped;
}

// Words that end a CJK name/place run: "我叫张三今年30岁" yields 张三, "出生在成都的一个小镇" yields 成都.
const CJK_STOP_WORDS = [
  "今年",
  "现在",
  "目前",
  "今天",
  "昨天",
  "明天",
  "工作",
  "出生",
  "来自",
  "一个",
  "是",
  "的",
  "和",
  "住",
  "岁",
  "了",
  "呢",
  "啊",
  "吧",
  "哦",
  "在",
  "从",
  "我",
  "你",
  "他",
  "她",
];
const EN_STOP_WORDS = new Set([
  "the",
  "a",
  "an",
  "in",
  "at",
  "on",
  "and",
  "but",
  "not",
  "so",
  "very",
  "from",
  "currently",
  "now",
  "also",
  "here",
  "there",
  "with",
  "near",
  "since",
  "when",
  "because",
  "too",
  "is",
  "was",
]);
const EN_MONTHS =
  /^(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)$/i;

function cutAtStopWords(run: string): string {
  let end = run.length;
  for (const word of CJK_STOP_WORDS) {
    const at = run.indexOf(word, 1);
    if (at > 0 && at < end) end = at;
  }
  return run.slice(0, end);
}

const ZH_SELF_STATEMENTS =
  /(?:我叫|我的名字是|我的名字叫|姓名\s*[:：]|出生(?:于|在)|出生地\s*[:：]|我住在)\s*([\p{Script=Han}\p{L}·]{1,40})/gu;
const EN_SELF_STATEMENTS =
  /\b(?:my name is|i was born in|birthplace\s*:?|i live in)\s+([A-Za-z][A-Za-z'’-]*(?:\s+[A-Za-z][A-Za-z'’-]*){0,3})/giu;

export interface MessageForTerms {
  readonly role: Role;
  readonly content: readonly ContentPart[];
}

/**
 * Names and places the user stated about themselves, from the text parts of USER messages only
 * (assistant, tool and system text is not the user's self-description).
 * zh: 我叫X, 我的名字是X, 姓名[:：]X, 出生(于|在)X, 出生地[:：]X, 我住在X — X is the following run of
 * letters/CJK (up to punctuation, digits or a space), cut at common function words (CJK_STOP_WORDS).
 * en: "my name is X", "I was born in X", "birthplace: X", "I live in X" — X is the next word plus
 * up to three following capitalized words ("New York City"); a first word that is a function word
 * ("in a small town") or a month ("born in May") yields nothing.
 * Terms are 1–20 characters, deduplicated, in order of first appearance.
 */
export function extractPersonalTerms(messages: readonly MessageForTerms[]): string[] {
  const terms = new Set<string>();
  const add = (term: string) => {
    const trimmed = term.trim();
    if (trimmed.length >= 1 && [...trimmed].length <= 20) terms.add(trimmed);
  };
  for (const message of messages) {
    if (message.role !== Role.ROLE_USER) continue;
    for (const { part } of message.content) {
      if (part?.$case !== "text") continue;
      const text = part.value.text;
      for (const match of text.matchAll(ZH_SELF_STATEMENTS)) add(cutAtStopWords(match[1] ?? ""));
      for (const match of text.matchAll(EN_SELF_STATEMENTS)) {
        const term = englishTerm(match[1] ?? "");
        if (term !== undefined) add(term);
      }
    }
  }
  return [...terms];
}

function englishTerm(run: string): string | undefined {
  const [first, ...rest] = run.split(/\s+/);
  if (first === undefined || EN_STOP_WORDS.has(first.toLowerCase()) || EN_MONTHS.test(first)) return undefined;
  const words = [first];
  for (const word of rest) {
    if (!/^[A-Z]/.test(word) || EN_STOP_WORDS.has(word.toLowerCase())) break;
    words.push(word);
  }
  return words.join(" ");
}
