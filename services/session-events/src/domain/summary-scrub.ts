import type { ContentPart } from "@prefix-guard/proto/common/v1/common";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { COMPOUND_SURNAMES, FUNCTION_SURNAMES, NON_NAME_WORDS, SINGLE_SURNAMES } from "./chinese-surnames";
import { SUMMARY_MAX_CHARS } from "./limits";
import { replaceTerms, type ScanWork } from "./term-matcher";
import { truncateCodePoints } from "./text";

/**
 * Summary scrubbing (seed 002 §4.4, docs/decisions/summary-scrubbing.md): a stored summary must not
 * carry birth dates, birth times, birth places, names or contact data, because it is copied into
 * later prompts and into continued sessions. A harness writes the summary, so nothing marks the
 * names in it: these are heuristics, tuned to lose a word now and then rather than keep a name, but
 * not to blank ordinary text.
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
 *    出生地：/生于/籍贯：/姓名：/名字是/名叫/用户叫/我叫, "born in", "birthplace:", "name is", "named".
 *    After a name phrase, a run that reads as surname + given name (6) is cut there (我叫王伟想咨询 →
 *    王伟); any other run is cut at common function words (CJK_STOP_WORDS);
 * 6. Chinese names (scrubChineseNames). A name is a listed surname (chinese-surnames.ts, compound ones
 *    first) plus 1–2 given-name characters, and is only looked for where a name is expected:
 *    a. after a lead: a role or relationship word (NAME_ROLES: 用户, 客户, 同事, 父亲, 经理 …) or a naming
 *       word (NAME_INTRODUCERS: 叫, 叫做, 名为, 自称 …), optionally followed by spaces or a colon. The name
 *       must then end at a boundary: the end of the text, any non-Han character (punctuation, space,
 *       Latin, digits), a title or role word (先生, 女士 …), a verb or adverb that typically follows a
 *       subject (NAME_END_WORDS: 希望, 反馈, 正在, 排查 …) or a particle (的 说 要 问 是 在 … ). The given
 *       name must not contain such a particle and must not contain the start of such a word, so
 *       用户王伟正在排查 is 王伟 and not 王伟正; a few characters that end a name but also begin given
 *       names (和 向 为 有 正 可 …) may only be its first character (张和平, but 王伟和李娜 is 王伟). Of the
 *       one- and two-character given names that fit, the longer wins; when none ends at a boundary
 *       (用户王伟怀揣… with an unlisted verb) nothing is scrubbed, as the brief's boundary rule asks, and
 *       the personal terms (8) are the net. A lead followed by a surname character and a title
 *       (用户王先生) loses the surname.
 *       Names listed right after the first (同事王伟、李娜和张敏) go too.
 *       This is why 用户反馈, 客户端, 同事们, 朋友圈 and 用户要求生成报告 survive: no surname follows.
 *       用户马上要…, 客户的余额, 用户高性能需求 survive because a surname character inside an ordinary
 *       word (NON_NAME_WORDS, wherever the word starts) never begins a name, and 用户高性能需求 also
 *       because 高性 is followed by 能, which is no boundary. FUNCTION_SURNAMES (于 向 曾 何 万) are never
 *       read as a surname after a lead (用户于周一…, 用户向客服…);
 *    b. before a title (NAME_TITLES: 先生, 女士, 老师, 经理, 总 …): surname + 0–2 given-name characters
 *       directly followed by the title, so 王伟先生 and 李老师 lose the name and keep the title, while
 *       历史老师, 江苏医生, 高级经理 survive through NON_NAME_WORDS. 总 is a title only when it does not
 *       start a word (总结, 总体, 总是 …);
 *    c. 姓X and X姓 where X is a surname (用户姓王, 王姓用户), but not in 百姓, 姓名, 姓氏.
 *    Place names are not names: 江苏 or 张家界 stay unless they follow a birth-place phrase (5); but
 *    名叫 in (5) takes its whole run, so 一款名叫王者荣耀的游戏 loses the game's name (名叫 introduces a
 *    person far more often). Nicknames (老王, 小李) and Latin names after a Chinese role word (用户 Alice)
 *    are not recognised: the first reads like 老 + surname in ordinary text, the second like 用户 SDK.
 *    A one-character Han personal term (a surname the harness knows) is read as one more surname here,
 *    with the same false positives a listed surname would have (文 → 用户文档的… loses 文档).
 * 7. English names: 1–3 capitalised words (initials allowed, all-caps words like API are not names) after
 *    an honorific (Mr, Mrs, Ms, Mx, Miss, Dr, Prof, Sir, Madam, with or without a period), after
 *    "I am called", "I'm called", "call me", in "this is <Name> speaking", and after a relationship word
 *    (wife, son, friend, colleague, boss …). "Prof. reviewed" has no capitalised word and stays. A few
 *    fixed brand and title names that only look like an honorific and a surname (Dr. Oetker, Dr Pepper,
 *    Dr. Martens, Mr. Robot, Mr. Bean) stay too: they are products and shows, not people, and naming
 *    them exactly keeps every other "Dr. <Name>" scrubbed;
 * 8. every personal term: those found in the session's user messages (extractPersonalTerms) and those
 *    the harness passes from its account data. Terms with Han characters match as substrings; a term
 *    that starts or ends with a Latin letter or digit must not continue a Latin word there ("Ann" is not
 *    in "annual", but is in "Ann说"); all terms match case-insensitively, with any run of whitespace
 *    where the term has one. A term that is a phone number (5–15 digits, nothing but digits, spaces and
 *    + ( ) . -) matches its digits with any separators, and a CN mobile with or without +86/0086.
 *    Multi-word terms are not split: "Alice Chen" does not scrub a lone "Alice", because parts of names
 *    are ordinary words too often (Will, May, Grace); the harness passes each form it wants removed.
 *    A term written without a space between Han characters also matches the text with one (王伟, 王 伟).
 * Finally the text is capped at SUMMARY_MAX_CHARS code points, without leaving half a marker.
 *
 * Cost: a summary is up to MAX_SUMMARY_INPUT_CHARS of text a model wrote from what a
 * user said, so every step is linear in its length. Where a regular expression would backtrack over
 * a run of the same characters (the e-mail local part, the digit groups of an international number, a
 * lead word followed by spaces) a scanner does the work; the personal terms are found in one pass
 * (term-matcher.ts). Every regular expression left here is linear by construction: each unbounded
 * repetition is followed by something it cannot match (\s* then a digit, a letter run then a space),
 * or by an optional group that has to end in such a thing, so a failed attempt reads a run once and
 * never tries to split it. ScrubWork counts the scanners' steps, one step per position of the name
 * scan (each of its look-ups reads a few characters of a fixed word list) and one step per character
 * for each pass of such a regular expression.
 */
export const SCRUB_MARKER = "[已移除]";

/** Work done by scrubSummary, for tests that bound it (see "Cost" above). */
export type ScrubWork = ScanWork;

const PHONES_BEFORE_INTERNATIONAL: readonly RegExp[] = [
  /(?<![\d+])(?:(?:\+|00)86[\s-]?)?1[3-9]\d(?:[\s-]?\d{4}){2}(?!\d)/g,
];
// International numbers ("+<country> …", 7–15 digits) are found by scanInternationalPhones.
const PHONES_AFTER_INTERNATIONAL: readonly RegExp[] = [
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
  // The optional year carries its own spaces: "\s*(year)?\s*" would retry every split of a long run of spaces.
  `(?:农历|阴历)(?:\\s*(?:[${CN_DIGIT}]{4}年|${YEAR}年))?\\s*(?:闰)?${CN_MONTH}${CN_DAY}`,
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

const EN_SUMMARY_PHRASE =
  /(\b(?:born in|birthplace(?:\s*:|\s+is)?|name is|named|lives? in))\s+([A-Za-z][A-Za-z'’-]*(?:\s+[A-Za-z][A-Za-z'’-]*){0,3})/giu;

// The leads after which the run is a person's name, so a surname-based cut (6) applies before the
// function-word cut; the others lead to places.
const ZH_NAME_LEAD = /^(?:姓名|名字|名叫|用户叫|我叫)/;

/**
 * Removes personal data from a summary and caps it; see the heuristics above. `personalTerms` are the
 * names, places and contact data known to belong to the user: what they stated about themselves in this
 * session and what the harness knows from its own account data. `work`, when given, is increased by the
 * steps taken (see "Cost" above).
 */
export function scrubSummary(
  summary: string,
  personalTerms: readonly string[],
  work: ScrubWork = { steps: 0 },
): string {
  // One step per character for a pass of a regular expression that is linear by construction.
  const pass = (text: string) => {
    work.steps += text.length;
    return text;
  };
  let text = scrubEmails(summary, work);
  for (const phone of PHONES_BEFORE_INTERNATIONAL) text = pass(text).replace(phone, phoneOrKeep);
  text = scanInternationalPhones(text, work);
  for (const phone of PHONES_AFTER_INTERNATIONAL) text = pass(text).replace(phone, phoneOrKeep);
  text = pass(text).replace(DATE_WITH_TIME, SCRUB_MARKER);
  text = pass(text).replace(SENTENCE, (sentence) =>
    BIRTH_CONTEXT.test(pass(sentence)) ? pass(sentence).replace(BIRTH_CLAUSE_FRAGMENTS, SCRUB_MARKER) : sentence,
  );
  text = scrubZhSummaryPhrases(text, work);
  text = pass(text).replace(EN_SUMMARY_PHRASE, (match, lead: string, run: string) => {
    const term = englishTerm(run);
    return term === undefined ? match : `${lead} ${SCRUB_MARKER}${run.slice(term.length)}`;
  });
  const terms = [...new Set(personalTerms.map((t) => t.trim()).filter((t) => t.length > 0))];
  // A lone surname as a substring would blank every 王 in 王者荣耀; it is only looked for where names are.
  const extraSurnames = new Set(terms.filter((t) => /^\p{Script=Han}$/u.test(t)));
  text = outsideMarkers(pass(text), (segment) => scrubChineseNames(segment, extraSurnames, work));
  // Four passes: honorifics, introductions, "this is … speaking", relationship words.
  work.steps += 4 * text.length;
  text = outsideMarkers(text, scrubEnglishNames);
  const ordered = terms.filter((t) => !extraSurnames.has(t)).sort((a, b) => b.length - a.length);
  text = replaceTerms(text, ordered, SCRUB_MARKER, work);
  text = pass(text).replace(/\[已移除\](?:\s*\[已移除\])+/g, SCRUB_MARKER);
  return capSummary(pass(text));
}

/** Applies `scrub` to the text between markers, so a term or a name rule never rewrites a marker's own 已移除. */
function outsideMarkers(text: string, scrub: (segment: string) => string): string {
  return text.split(SCRUB_MARKER).map(scrub).join(SCRUB_MARKER);
}

/** A phone pattern's match becomes a marker when it holds 7–15 digits; otherwise it stays as written. */
function phoneOrKeep(match: string): string {
  return isPhoneDigitCount(match) ? SCRUB_MARKER : match;
}

function isPhoneDigitCount(match: string): boolean {
  const digits = match.replace(/\D/g, "").length;
  return digits >= 7 && digits <= 15;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

const isAsciiDigit = (code: number): boolean => code >= 0x30 && code <= 0x39;
const isAsciiLetter = (code: number): boolean => (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
const isAsciiAlnum = (code: number): boolean => isAsciiDigit(code) || isAsciiLetter(code);
/** [A-Za-z0-9._%+-] */
const isEmailLocal = (code: number): boolean =>
  isAsciiAlnum(code) || code === 0x2e || code === 0x5f || code === 0x25 || code === 0x2b || code === 0x2d;
/** [A-Za-z0-9-] */
const isDomainLabel = (code: number): boolean => isAsciiAlnum(code) || code === 0x2d;
const AT = 0x40;
const DOT = 0x2e;

/**
 * E-mail addresses, as /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g found
 * them, in one pass. That pattern tried every start in a run of local-part characters and scanned the
 * whole domain from each, n²/2 steps on "1…1@a…a.1". Its answer only depends on the "@": the local
 * part is the run of local-part characters before it (not reaching back into the previous address),
 * and the domain is its first label plus the following ".label"s up to the last one that starts with
 * two ASCII letters, where it ends after those letters (a@b.cc1 → a@b.cc).
 */
function scrubEmails(text: string, work: ScrubWork): string {
  let out = "";
  let copied = 0;
  let runStart = 0;
  for (let i = 0; i < text.length; i++) {
    work.steps++;
    const code = text.charCodeAt(i);
    if (isEmailLocal(code)) continue;
    if (code === AT) {
      const localStart = Math.max(runStart, copied);
      const end = localStart < i ? emailDomainEnd(text, i + 1, work) : -1;
      if (end > 0) {
        out += text.slice(copied, localStart) + SCRUB_MARKER;
        copied = end;
        runStart = end;
        i = end - 1;
        continue;
      }
    }
    runStart = i + 1;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** Where the domain starting at `from` ends, or -1 when there is none (see scrubEmails). */
function emailDomainEnd(text: string, from: number, work: ScrubWork): number {
  const labelEnd = (start: number) => {
    let at = start;
    while (at < text.length && isDomainLabel(text.charCodeAt(at))) at++;
    work.steps += at - start + 1;
    return at;
  };
  let at = labelEnd(from);
  if (at === from) return -1;
  let end = -1;
  while (text.charCodeAt(at) === DOT) {
    const start = at + 1;
    const stop = labelEnd(start);
    if (stop === start) break;
    let letters = start;
    while (letters < stop && isAsciiLetter(text.charCodeAt(letters))) letters++;
    if (letters - start >= 2) end = letters;
    at = stop;
  }
  return end;
}

const PLUS = 0x2b;
const OPEN_PAREN = 0x28;
const CLOSE_PAREN = 0x29;
/** [\s.-] */
const isGroupSeparator = (code: number): boolean => code === 0x2e || code === 0x2d || isRegExpSpace(code);
/** \w */
const isWordChar = (code: number): boolean => isAsciiAlnum(code) || code === 0x5f;
const REGEXP_SPACE = /^\s$/;
const isRegExpSpace = (code: number): boolean => !Number.isNaN(code) && REGEXP_SPACE.test(String.fromCharCode(code));

/**
 * International numbers, as /(?<![\w+])\+\d{1,3}(?:[\s.-]?\(?\d{1,4}\)?){2,6}(?!\d)/g found them: the
 * first match in that pattern's own order of trying, replaced when it holds 7–15 digits. The pattern
 * tried every way of cutting a long digit run into groups (thousands per "+"); here each (position,
 * groups so far) is tried once and its answer remembered, which gives the same match in at most
 * 46 × 7 tries per "+".
 */
function scanInternationalPhones(text: string, work: ScrubWork): string {
  let out = "";
  let copied = 0;
  let searched = 0;
  for (let plus = text.indexOf("+"); plus >= 0; plus = text.indexOf("+", plus + 1)) {
    work.steps += plus + 1 - searched;
    searched = plus + 1;
    const before = text.charCodeAt(plus - 1);
    if (plus > 0 && (isWordChar(before) || before === PLUS)) continue;
    const end = internationalPhoneEnd(text, plus, work);
    if (end < 0) continue;
    // A match with too few or too many digits stays as written, and the search goes on after it.
    if (isPhoneDigitCount(text.slice(plus, end))) out += text.slice(copied, plus) + SCRUB_MARKER;
    else out += text.slice(copied, end);
    copied = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

function internationalPhoneEnd(text: string, plus: number, work: ScrubWork): number {
  const digitsAt = (at: number, max: number) => {
    let count = 0;
    while (count < max && isAsciiDigit(text.charCodeAt(at + count))) count++;
    return count;
  };
  const memo = new Map<number, number>();
  // The {2,6} repetition from `at` with `done` groups matched: its end, or -1.
  const groups = (at: number, done: number): number => {
    const key = at * 8 + done;
    const known = memo.get(key);
    if (known !== undefined) return known;
    work.steps++;
    let end = done < 6 ? oneMoreGroup(at, done) : -1;
    if (end < 0 && done >= 2 && !isAsciiDigit(text.charCodeAt(at))) end = at;
    memo.set(key, end);
    return end;
  };
  // [\s.-]? \(? \d{1,4} \)? — each optional part first taken, then left out, as the pattern tried them.
  const oneMoreGroup = (at: number, done: number): number => {
    for (const separator of isGroupSeparator(text.charCodeAt(at)) ? [1, 0] : [0]) {
      const afterSeparator = at + separator;
      for (const open of text.charCodeAt(afterSeparator) === OPEN_PAREN ? [1, 0] : [0]) {
        const digitsStart = afterSeparator + open;
        for (let count = digitsAt(digitsStart, 4); count >= 1; count--) {
          const digitsEnd = digitsStart + count;
          for (const close of text.charCodeAt(digitsEnd) === CLOSE_PAREN ? [1, 0] : [0]) {
            work.steps++;
            const end = groups(digitsEnd + close, done + 1);
            if (end >= 0) return end;
          }
        }
      }
    }
    return -1;
  };
  for (let country = digitsAt(plus + 1, 3); country >= 1; country--) {
    const end = groups(plus + 1 + country, 0);
    if (end >= 0) return end;
  }
  return -1;
}

const TERM_RUN_CHAR = /^[\p{Script=Han}\p{L}·]$/u;
const MAX_TERM_RUN = 40;

interface ZhPhraseLead {
  readonly word: string;
  /** 出生地, 籍贯 and 姓名 may be followed by ：, : , 是 or 为 before the run. */
  readonly colon: boolean;
}

const ZH_PHRASE_LEADS: ReadonlyMap<string, readonly ZhPhraseLead[]> = (() => {
  const leads = "出生于 出生在 出生地 生于 籍贯 姓名 名字是 名字叫 名叫 用户叫 我叫 住在 居住在 现居".split(" ");
  const withColon = new Set(["出生地", "籍贯", "姓名"]);
  const index = new Map<string, ZhPhraseLead[]>();
  for (const word of leads) {
    const first = word[0] ?? "";
    index.set(first, [...(index.get(first) ?? []), { word, colon: withColon.has(word) }]);
  }
  return index;
})();
const ZH_PHRASE_COLONS = new Set([..."：:是为"]);

/**
 * The place or name after a birth-place / name phrase (heuristic 5), in one pass. It is what
 * /(出生于|…|姓名\s*[:：是为]?|…)\s*([\p{Script=Han}\p{L}·]{1,40})/gu replaced, keeping what that
 * pattern kept of the lead: after 出生地, 籍贯 and 姓名 the spaces (and the colon) stay with the lead,
 * after the other leads the spaces go with the run. The pattern's two \s* around the optional colon
 * tried every split of a run of spaces, (n²) on "姓名" and 20,000 spaces.
 */
function scrubZhSummaryPhrases(text: string, work: ScrubWork): string {
  let out = "";
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    work.steps++;
    const lead = ZH_PHRASE_LEADS.get(text[i] ?? "")?.find((candidate) => text.startsWith(candidate.word, i));
    if (lead === undefined) {
      i++;
      continue;
    }
    const afterWord = i + lead.word.length;
    const afterSpaces = skipRegExpSpaces(text, afterWord, work);
    let leadEnd = -1;
    let runStart = -1;
    if (lead.colon) {
      if (ZH_PHRASE_COLONS.has(text[afterSpaces] ?? "")) {
        const afterColon = skipRegExpSpaces(text, afterSpaces + 1, work);
        if (isTermRunChar(text, afterColon)) [leadEnd, runStart] = [afterSpaces + 1, afterColon];
      }
      // 是 and 为 are Han: without a run after them, they start the run themselves.
      if (runStart < 0 && isTermRunChar(text, afterSpaces)) [leadEnd, runStart] = [afterSpaces, afterSpaces];
    } else if (isTermRunChar(text, afterSpaces)) [leadEnd, runStart] = [afterWord, afterSpaces];
    if (runStart < 0) {
      i++;
      continue;
    }
    let runEnd = runStart;
    for (let count = 0; count < MAX_TERM_RUN && isTermRunChar(text, runEnd); count++) {
      runEnd += (text.codePointAt(runEnd) ?? 0) > 0xffff ? 2 : 1;
      work.steps++;
    }
    const leadText = text.slice(i, leadEnd);
    const run = text.slice(runStart, runEnd);
    const term = ZH_NAME_LEAD.test(leadText) ? cutAtName(run) : cutAtStopWords(run);
    out += `${text.slice(copied, i)}${leadText}${SCRUB_MARKER}${run.slice(term.length)}`;
    copied = runEnd;
    i = runEnd;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

function skipRegExpSpaces(text: string, from: number, work: ScrubWork): number {
  let at = from;
  while (at < text.length && isRegExpSpace(text.charCodeAt(at))) at++;
  work.steps += at - from;
  return at;
}

function isTermRunChar(text: string, at: number): boolean {
  const cp = text.codePointAt(at);
  return cp !== undefined && TERM_RUN_CHAR.test(String.fromCodePoint(cp));
}

/** Caps at SUMMARY_MAX_CHARS code points; a marker cut in half is dropped rather than left as "[已移". */
function capSummary(text: string): string {
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

/** After a name phrase: the surname + given name if the run reads as one, else the function-word cut. */
function cutAtName(run: string): string {
  const length = chineseNameAt(run, 0, lexiconMask(run), new Set(), true);
  return length === undefined ? cutAtStopWords(run) : run.slice(0, length);
}

const wordList = (list: string): string[] => list.split(/\s+/).filter((word) => word.length > 0);

// Role and relationship words a harness puts before a person's name (用户王伟, 客户张敏, 父亲刘建国).
// English-style "user"/"client" leads are not listed for Latin names: 用户 Dashboard is as likely as 用户 Alice.
const NAME_ROLES = wordList(`
  用户 客户 顾客 访客 来访者 咨询者 求助者 患者 病人 病患 学生 学员 员工 职员 同事 同学 朋友 好友 网友 室友 舍友
  邻居 先生 女士 小姐 老师 老师傅 师傅 教授 医生 大夫 护士 律师 经理 总经理 总监 主管 主任 老板 老板娘 老总 领导
  上司 上级 下属 店长 组长 顾问 工程师 负责人 联系人 对接人 当事人 申请人 候选人 面试官 合伙人 房东 租客 本人
  父亲 母亲 爸爸 妈妈 父母 妻子 丈夫 老公 老婆 爱人 伴侣 男友 女友 男朋友 女朋友 未婚夫 未婚妻 前妻 前夫 儿子 女儿
  孩子 哥哥 姐姐 弟弟 妹妹 兄弟 姐妹 爷爷 奶奶 外公 外婆 姥姥 姥爷 叔叔 阿姨 舅舅 舅妈 姑姑 姨妈 表哥 表姐 表弟
  表妹 堂哥 堂姐 堂弟 堂妹 岳父 岳母 公公 婆婆 女婿 儿媳 亲戚 家人 家长 会员 成员 买家 卖家 乘客 司机 客服 作者
  嘉宾 主播 教练 选手 队员 高管 业主 搭档
`);
// Words that introduce a name; 名叫/我叫 are also handled with the rest of their run by ZH_SUMMARY_PHRASE.
const NAME_INTRODUCERS = wordList("叫 叫做 名为 自称 化名 署名 昵称 网名 真名 本名 全名");
// Titles that follow a name (王伟先生, 李老师, 张总). 总 alone is checked against TITLE_总_WORDS.
const NAME_TITLES = wordList(`
  先生 女士 小姐 老师 老师傅 师傅 教授 医生 大夫 护士 律师 经理 总经理 总监 主任 主管 老板 总裁 董事长 总 同学
  阿姨 叔叔 博士 工程师 校长 院长 局长 处长 科长 部长 书记 警官 法官 队长 组长 班长 店长 行长
`);
// 总 starts these words, so 马总结, 对方总是 and 周总体 hold no title (and 对方/周… no name).
const TITLE_总_WORDS = /^总[结体共计数量额部线价值览账表决裁是归算括会之]/;
// Verbs, adverbs and time words that typically follow the subject of a summary sentence: a name ends
// right before them. A given name may not contain the start of one (王伟正在 is 王伟 + 正在).
const NAME_END_WORDS = wordList(`
  希望 认为 表示 提出 提到 提及 提供 提交 提问 反馈 负责 需要 觉得 担心 关心 关注 咨询 询问 请求 计划 打算 准备 目前
  最近 今年 今天 昨天 明天 此前 之前 之后 因为 自己 确认 发现 遇到 使用 正在 一直 同意 建议 指出 投诉 抱怨 感觉 决定
  选择 购买 申请 报告 预约 取消 收到 登录 注册 联系 来自 去年 明年 刚刚 刚才 现在 后来 随后 接着 坚持 喜欢 尝试 试图
  无法 不能 没有 一起 经常 通常 总是 上传 下载 回复 回答 解释 说明 描述 介绍 分享 强调 补充 承认 否认 追问 更新 修改
  完成 开始 继续 停止 结束 想要 发来 发送 年龄 身份 出生 生于 住在 居住 主导 参与 带领 管理 处理 排查 调试 开发 测试
  部署 编写 实现 设计 优化 重构 复现 定位 分析 评估 审核 审查 批准 要求 表达 透露 告诉 通知 邀请 安排 推荐 报名 下单
  支付 退款 投资 来电 留言 签约 签署 签字 特别 非常 十分 比较 有点 有些 有关 有问题 有兴趣 有意 可以 可能 能否 应该
  必须 主要 其实 确实 本来 原本 已经 曾经 现任 担任 作为 负责人 毕业 就职 就读 任职 所在 家住 老家 名下 账号 手机
  怀孕 生病 住院 退休 上班 下班 工作 入职 离职 去世 过世 生日 结婚 离婚 出差 加班 休假 请假 回家 失业 考试 考研
  留学 搬家 买房 装修 看病 手术 康复 身体 性格 脾气 修复 查看 查询 调用 调整 配置 上线 下线 发布 回滚 合并 升级
  迁移 接入 对接 维护 搭建 编译 运行 重启 扩容 压测 监控 写了 改了 问了 看了 做了 拿到 得到 收集 整理 汇总 跟进
`);
// Particles and pronouns that never occur in a given name and end one (用户王伟在…, 同事李娜的…).
const NOT_GIVEN = new Set([
  ..."的地得了着过吗呢吧啊呀嘛哦说讲问要想是在与及跟同也都就还又再已将会把被让给对从由因等们这那哪其之所并而或却则我你他她它您咱不没很最太更叫称各每该今昨岁个次位些仍便即虽但只到去来用做写看找听买卖曾",
]);
// Characters that end a name but also begin given names (张和平, 王向阳, 李可, 李有才): allowed as the
// first given-name character only, so 王伟和 is 王伟 + 和.
const END_OR_FIRST_GIVEN = new Set([..."和向为以于自非有正可能"]);
// Further names after the first (同事王伟、李娜和张敏).
const NAME_LIST_JOINERS = wordList("、 和 与 及 以及 跟 或 同 还有");

function indexByFirstChar(list: readonly string[]): ReadonlyMap<string, readonly string[]> {
  const index = new Map<string, string[]>();
  for (const word of [...new Set(list)].sort((a, b) => b.length - a.length)) {
    const first = word[0] ?? "";
    index.set(first, [...(index.get(first) ?? []), word]);
  }
  return index;
}

const LEAD_INDEX = indexByFirstChar([...NAME_ROLES, ...NAME_INTRODUCERS]);
const TITLE_INDEX = indexByFirstChar(NAME_TITLES);
const NAME_END_INDEX = indexByFirstChar([...NAME_END_WORDS, ...NAME_TITLES, ...NAME_ROLES]);
const JOINER_INDEX = indexByFirstChar(NAME_LIST_JOINERS);
const LEXICON_INDEX = indexByFirstChar(NON_NAME_WORDS);

/** The longest word of `index` that starts at `at`. */
function wordAt(text: string, at: number, index: ReadonlyMap<string, readonly string[]>): string | undefined {
  return index.get(text[at] ?? "")?.find((word) => text.startsWith(word, at));
}

function titleAt(text: string, at: number): string | undefined {
  const title = wordAt(text, at, TITLE_INDEX);
  return title === "总" && TITLE_总_WORDS.test(text.slice(at, at + 2)) ? undefined : title;
}

const HAN_CHAR = /^\p{Script=Han}$/u;
const isHan = (char: string | undefined): boolean => char !== undefined && HAN_CHAR.test(char);

/** 1 for every position inside an ordinary word that contains a surname character (NON_NAME_WORDS). */
function lexiconMask(text: string): Uint8Array {
  const mask = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const word = wordAt(text, i, LEXICON_INDEX);
    if (word !== undefined) mask.fill(1, i, i + word.length);
  }
  return mask;
}

function surnameAt(text: string, at: number, extraSurnames: ReadonlySet<string>): string | undefined {
  const compound = COMPOUND_SURNAMES.find((surname) => text.startsWith(surname, at));
  if (compound !== undefined) return compound;
  const char = text[at];
  return char !== undefined && (SINGLE_SURNAMES.has(char) || extraSurnames.has(char)) ? char : undefined;
}

/** Whether text[from, from + length) can be a given name: Han, no particle, no start of a title or end word. */
function givenNameFits(text: string, from: number, length: number): boolean {
  for (let k = 0; k < length; k++) {
    const char = text[from + k];
    if (!isHan(char) || char === undefined || NOT_GIVEN.has(char)) return false;
    if (k > 0 && END_OR_FIRST_GIVEN.has(char)) return false;
    if (wordAt(text, from + k, NAME_END_INDEX) !== undefined) return false;
  }
  return true;
}

function endsName(text: string, at: number): boolean {
  const char = text[at];
  if (char === undefined || !isHan(char)) return true;
  return NOT_GIVEN.has(char) || END_OR_FIRST_GIVEN.has(char) || wordAt(text, at, NAME_END_INDEX) !== undefined;
}

/**
 * The length of the surname + given name at `at` that ends at a boundary, or undefined. `named` is for
 * places where the text says a name follows (我叫…): there a preposition-like surname (于谦) is a surname.
 * A surname directly followed by a title counts alone (用户王先生 → 王).
 */
function chineseNameAt(
  text: string,
  at: number,
  mask: Uint8Array,
  extraSurnames: ReadonlySet<string>,
  named: boolean,
): number | undefined {
  const surname = surnameAt(text, at, extraSurnames);
  if (surname === undefined || mask[at] === 1) return undefined;
  if (!named && FUNCTION_SURNAMES.has(surname) && !extraSurnames.has(surname)) return undefined;
  const given = at + surname.length;
  if (titleAt(text, given) !== undefined) return surname.length;
  for (const length of [2, 1]) {
    if (givenNameFits(text, given, length) && endsName(text, given + length)) return surname.length + length;
  }
  return undefined;
}

/** The length of a surname + 0–2 given-name characters directly followed by a title (王伟先生, 李老师). */
function nameBeforeTitleAt(
  text: string,
  at: number,
  mask: Uint8Array,
  extraSurnames: ReadonlySet<string>,
): number | undefined {
  const surname = surnameAt(text, at, extraSurnames);
  if (surname === undefined || mask[at] === 1) return undefined;
  const given = at + surname.length;
  const prepositionLike = FUNCTION_SURNAMES.has(surname) && !extraSurnames.has(surname);
  // 向王老师请教: 向 is the preposition when a surname follows it.
  if (prepositionLike && surnameAt(text, given, extraSurnames) !== undefined) return undefined;
  for (const length of [0, 1, 2]) {
    if (length > 0 && !givenNameFits(text, given, length)) return undefined;
    if (length === 0 && prepositionLike) continue;
    if (titleAt(text, given + length) !== undefined) return surname.length + length;
  }
  return undefined;
}

/**
 * Chinese names after a lead, before a title, and in 姓X / X姓 (heuristic 6 of the header). One step
 * per position: every look-up there reads a few characters of a fixed word list.
 */
function scrubChineseNames(text: string, extraSurnames: ReadonlySet<string>, work: ScrubWork): string {
  const mask = lexiconMask(text);
  work.steps += text.length;
  let out = "";
  let i = 0;
  while (i < text.length) {
    work.steps++;
    const lead = wordAt(text, i, LEAD_INDEX);
    if (lead !== undefined) {
      let at = i + lead.length;
      while (text[at] === " " || text[at] === ":" || text[at] === "：") at++;
      let name = chineseNameAt(text, at, mask, extraSurnames, false);
      if (name === undefined) {
        out += lead;
        i += lead.length;
        continue;
      }
      out += text.slice(i, at) + SCRUB_MARKER;
      i = at + name;
      for (;;) {
        const joiner = wordAt(text, i, JOINER_INDEX);
        if (joiner === undefined) break;
        name = chineseNameAt(text, i + joiner.length, mask, extraSurnames, false);
        if (name === undefined) break;
        out += joiner + SCRUB_MARKER;
        i += joiner.length + name;
      }
      continue;
    }
    if (text[i] === "姓" && text[i - 1] !== "百") {
      const surname = surnameAt(text, i + 1, extraSurnames);
      if (surname !== undefined) {
        out += `姓${SCRUB_MARKER}`;
        i += 1 + surname.length;
        continue;
      }
    }
    const surname = surnameAt(text, i, extraSurnames);
    if (surname !== undefined && mask[i] !== 1) {
      const after = i + surname.length;
      if (text[after] === "姓" && text[after + 1] !== "名" && text[after + 1] !== "氏") {
        out += SCRUB_MARKER;
        i = after;
        continue;
      }
      const titled = nameBeforeTitleAt(text, i, mask, extraSurnames);
      if (titled !== undefined) {
        out += SCRUB_MARKER;
        i += titled;
        continue;
      }
    }
    out += text[i];
    i++;
  }
  return out;
}

const EN_NAME_WORD = String.raw`\p{Lu}\.|\p{Lu}[\p{Script=Latin}\p{M}]*(?:[-'’]\p{Lu}[\p{Script=Latin}\p{M}]*)*`;
const EN_NAME_RUN = String.raw`(?:${EN_NAME_WORD})(?:[ \t]+(?:${EN_NAME_WORD})){0,2}`;
// Case-sensitive on purpose: with the i flag \p{Lu} would match lowercase words too.
const EN_HONORIFIC = new RegExp(
  String.raw`(?<![\p{L}\p{N}])(Mrs|Mr|Ms|Mx|Miss|Dr|Prof|Sir|Madam)(\.[ \t]*|[ \t]+)(${EN_NAME_RUN})`,
  "gu",
);
const EN_INTRODUCTION = new RegExp(
  String.raw`(?<![\p{L}])([Ii] am called|[Ii]['’]m called|[Cc]all me)([ \t]+)(${EN_NAME_RUN})`,
  "gu",
);
const EN_SPEAKING = new RegExp(String.raw`(?<![\p{L}])([Tt]his is)([ \t]+)(${EN_NAME_RUN})(?=[ \t]+speaking\b)`, "gu");
const EN_RELATIONS = wordList(`
  wife husband son daughter father mother dad mom mum brother sister friend colleague coworker co-worker boss fiancé
  fiancée fiance fiancee boyfriend girlfriend spouse grandmother grandfather grandma grandpa uncle aunt cousin nephew
  niece roommate neighbor neighbour
`);
const EN_RELATION = new RegExp(
  String.raw`(?<![\p{L}-])(${EN_RELATIONS.sort((a, b) => b.length - a.length)
    .map((word) => `[${word[0]}${word[0]?.toUpperCase()}]${escapeRegExp(word.slice(1))}`)
    .join("|")})(?![\p{L}-])([ \t]+)(${EN_NAME_RUN})`,
  "gu",
);
// Products and shows that read as an honorific and a surname; anything else after an honorific goes.
const EN_NOT_PEOPLE = new Set(["Dr Oetker", "Dr Pepper", "Dr Martens", "Mr Robot", "Mr Bean"]);
const EN_WEEKDAYS = /^(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)$/i;

/** How many leading words of a capitalised run are a name: not a function word, month, day or acronym. */
function englishNameWords(run: string): { name: string; rest: string } | undefined {
  const parts = run.split(/([ \t]+)/);
  let count = 0;
  for (let k = 0; k < parts.length; k += 2) {
    const word = parts[k] ?? "";
    const bare = word.replace(/\.$/, "");
    const notName =
      EN_STOP_WORDS.has(bare.toLowerCase()) ||
      bare === "I" ||
      EN_MONTHS.test(bare) ||
      EN_WEEKDAYS.test(bare) ||
      /^\p{Lu}{2,}$/u.test(bare);
    if (notName) break;
    count++;
  }
  if (count === 0) return undefined;
  const cut = 2 * count - 1;
  return { name: parts.slice(0, cut).join(""), rest: parts.slice(cut).join("") };
}

/** English names after honorifics, self-introductions and relationship words (heuristic 7 of the header). */
function scrubEnglishNames(text: string): string {
  const replace = (match: string, lead: string, gap: string, run: string) => {
    const name = englishNameWords(run);
    return name === undefined ? match : `${lead}${gap}${SCRUB_MARKER}${name.rest}`;
  };
  return text
    .replace(EN_HONORIFIC, (match, honorific: string, gap: string, run: string) => {
      const firstWord = run.split(/[ \t]/)[0] ?? "";
      return EN_NOT_PEOPLE.has(`${honorific} ${firstWord}`) ? match : replace(match, honorific, gap, run);
    })
    .replace(EN_INTRODUCTION, replace)
    .replace(EN_SPEAKING, replace)
    .replace(EN_RELATION, replace);
}

const ZH_SELF_STATEMENTS =
  /(我叫|我的名字是|我的名字叫|姓名\s*[:：]|出生(?:于|在)|出生地\s*[:：]|我住在)\s*([\p{Script=Han}\p{L}·]{1,40})/gu;
const ZH_SELF_NAME_LEAD = /^(?:我叫|我的名字|姓名)/;
const EN_SELF_STATEMENTS =
  /\b(?:my name is|i was born in|birthplace(?:\s*:)?|i live in)\s+([A-Za-z][A-Za-z'’-]*(?:\s+[A-Za-z][A-Za-z'’-]*){0,3})/giu;

export interface MessageForTerms {
  readonly role: Role;
  readonly content: readonly ContentPart[];
}

/**
 * Names and places the user stated about themselves, from the text parts of USER messages only
 * (assistant, tool and system text is not the user's self-description).
 * zh: 我叫X, 我的名字是X, 姓名[:：]X, 出生(于|在)X, 出生地[:：]X, 我住在X — X is the following run of
 * letters/CJK (up to punctuation, digits or a space); a name is cut after surname + given name when it
 * reads as one (我叫王伟想咨询 → 王伟), anything else at common function words (CJK_STOP_WORDS).
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
      for (const [, lead = "", run = ""] of text.matchAll(ZH_SELF_STATEMENTS)) {
        add(ZH_SELF_NAME_LEAD.test(lead) ? cutAtName(run) : cutAtStopWords(run));
      }
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
