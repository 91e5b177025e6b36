// Personal terms in a summary, found in one pass however many terms there are.
//
// The rule is the one summary-scrub.ts documents (heuristic 8). It used to be one regex per term,
// each run over the whole text: a summary of 20,000 characters and a session whose user messages
// yield a few thousand terms cost seconds. Here every term goes into one Aho-Corasick automaton over
// a normalized copy of the text, so finding them is O(text + terms + occurrences); at most one
// occurrence per distinct term length ends at any position, and the terms found in a session are at
// most 20 characters. What the per-term passes did in order (longest term first, each replacing what
// it found before the next one looked) is kept by choosing among the occurrences in that same order.
//
// Normalized text: each code point case-folded, each whitespace run one space, and no space at all
// between two Han characters, because a term's space between Han characters was optional. That also
// lets a term written without the space ("王伟") match the text with one ("王 伟"): a name the
// scrubber would otherwise have kept.

/** Work done, for tests that bound it: characters examined, automaton steps and occurrences tried. */
export interface ScanWork {
  steps: number;
}

/** A term as the text must show it (normalized as below). */
interface LiteralPattern {
  readonly kind: "literal";
  readonly units: readonly number[];
  /** A term starting (ending) with a Latin letter or digit must not continue a Latin word there. */
  readonly checkBefore: boolean;
  readonly checkAfter: boolean;
}

/** A term that is a phone number: its digits, written with any separators. */
interface PhonePattern {
  readonly kind: "phone";
  readonly digits: readonly number[];
  /** A CN mobile: +86, 0086 or 86 may come before it. */
  readonly countryCode: boolean;
}

type Pattern = LiteralPattern | PhonePattern;

const PHONE_TERM = /^[+\d\s().-]+$/;
const CN_MOBILE_WITH_CODE = /^(?:0086|86)1[3-9]\d{9}$/;
const CN_MOBILE = /^1[3-9]\d{9}$/;
const LATIN_OR_DIGIT_START = /^[\p{Script=Latin}\p{N}]/u;
const LATIN_OR_DIGIT_END = /[\p{Script=Latin}\p{N}]$/u;
const LATIN_WORD_CHAR = /^[\p{Script=Latin}\p{N}_]$/u;
const HAN = /^\p{Script=Han}$/u;

const BREAK = -1;
const D0 = 0x30;
const D8 = 0x38;
const D6 = 0x36;

function patternOf(term: string): Pattern {
  const digits = term.replace(/\D/g, "");
  if (PHONE_TERM.test(term) && digits.length >= 5 && digits.length <= 15) {
    // The harness stores a number one way and the model writes it another: 13812345678, 138-1234-5678, +86 138….
    const national = CN_MOBILE_WITH_CODE.test(digits) ? digits.replace(/^(?:00)?86/, "") : digits;
    return { kind: "phone", digits: [...national].map((d) => d.charCodeAt(0)), countryCode: CN_MOBILE.test(national) };
  }
  return {
    kind: "literal",
    units: normalize(term, undefined, undefined).units,
    checkBefore: LATIN_OR_DIGIT_START.test(term),
    checkAfter: LATIN_OR_DIGIT_END.test(term),
  };
}

/**
 * Replaces every occurrence of `terms` (already in the order they take precedence) in `text` with
 * `marker`, leaving existing markers alone: a term never matches inside one or across one.
 */
export function replaceTerms(text: string, terms: readonly string[], marker: string, work: ScanWork): string {
  if (terms.length === 0 || text.length === 0) return text;
  const blocked = markerMask(text, marker, work);
  const patterns = terms.map(patternOf);
  for (const term of terms) work.steps += term.length;

  const occurrences: number[][] = patterns.map(() => []);
  const literals = patterns.flatMap((pattern, id) => (pattern.kind === "literal" ? [{ id, pattern }] : []));
  const phones = patterns.flatMap((pattern, id) => (pattern.kind === "phone" ? [{ id, pattern }] : []));

  const normalized = normalize(text, blocked, work);
  if (literals.length > 0) {
    const automaton = new Automaton(
      literals.map(({ pattern }) => pattern.units),
      work,
    );
    automaton.scan(normalized.units, work, (index, end) => occurrences[literals[index]?.id ?? 0]?.push(end));
  }
  const skeleton = digitSkeleton(text, blocked, phones.length > 0, work);
  if (phones.length > 0) {
    const automaton = new Automaton(
      phones.map(({ pattern }) => pattern.digits),
      work,
    );
    automaton.scan(skeleton.digits, work, (index, end) => occurrences[phones[index]?.id ?? 0]?.push(end));
  }

  // Term by term in precedence order, each one's occurrences left to right: what the passes did.
  const chosen = new Chosen(text.length);
  for (const [id, pattern] of patterns.entries()) {
    chosen.term = id;
    for (const end of occurrences[id] ?? []) {
      work.steps++;
      if (pattern.kind === "phone") {
        const first = end - pattern.digits.length + 1;
        const range = phoneRange(text, skeleton, first, end, pattern.countryCode, chosen, work);
        if (range !== undefined) chosen.add(range[0], range[1], work);
        continue;
      }
      const start = normalized.start[end - pattern.units.length + 1] ?? 0;
      const stop = normalized.end[end] ?? 0;
      // The look-arounds first: they cost O(1), the overlap test O(log n) at worst.
      if (pattern.checkBefore && continuesLatinWord(text, start - 1, chosen, true)) continue;
      if (pattern.checkAfter && continuesLatinWord(text, stop, chosen, false)) continue;
      if (chosen.overlaps(start, stop, work)) continue;
      chosen.add(start, stop, work);
    }
  }
  return chosen.replace(text, marker);
}

/** 1 for each UTF-16 unit inside an existing marker. */
function markerMask(text: string, marker: string, work: ScanWork): Uint8Array {
  const mask = new Uint8Array(text.length);
  for (let at = text.indexOf(marker); at >= 0; at = text.indexOf(marker, at + marker.length)) {
    mask.fill(1, at, at + marker.length);
  }
  work.steps += text.length;
  return mask;
}

// `\s` of a regular expression: WhiteSpace and LineTerminator.
function isSpace(cp: number): boolean {
  return (
    (cp >= 0x09 && cp <= 0x0d) ||
    cp === 0x20 ||
    cp === 0xa0 ||
    cp === 0x1680 ||
    (cp >= 0x2000 && cp <= 0x200a) ||
    cp === 0x2028 ||
    cp === 0x2029 ||
    cp === 0x202f ||
    cp === 0x205f ||
    cp === 0x3000 ||
    cp === 0xfeff
  );
}

const isHan = (cp: number | undefined): boolean => cp !== undefined && HAN.test(String.fromCodePoint(cp));

const foldCache = new Map<number, string>();
const MAX_FOLD_CACHE = 4096;

/** Case-insensitive matching as the regex i flag did it: one code point to one (ß stays ß). */
function fold(cp: number): string {
  if (cp < 0x80) return String.fromCharCode(cp >= 0x41 && cp <= 0x5a ? cp + 0x20 : cp);
  // Dotless ı upper-cases to I, but the i flag never matched it with i.
  if (cp === 0x131) return "ı";
  let folded = foldCache.get(cp);
  if (folded === undefined) {
    const char = String.fromCodePoint(cp);
    const single = (value: string) => value.length > 0 && [...value].length === 1;
    const upper = char.toUpperCase();
    const viaUpper = single(upper) ? upper.toLowerCase() : "";
    const lower = char.toLowerCase();
    folded = single(viaUpper) ? viaUpper : single(lower) ? lower : char;
    if (foldCache.size < MAX_FOLD_CACHE) foldCache.set(cp, folded);
  }
  return folded;
}

interface Normalized {
  /** UTF-16 units of the normalized text; BREAK where an existing marker was. */
  readonly units: number[];
  /** For each unit, where its code point (or whitespace run) starts and ends in the original text. */
  readonly start: number[];
  readonly end: number[];
}

/** The text (or a term) as terms are matched against it; `blocked` units become a BREAK. */
function normalize(text: string, blocked: Uint8Array | undefined, work: ScanWork | undefined): Normalized {
  const units: number[] = [];
  const start: number[] = [];
  const end: number[] = [];
  const emit = (value: string, from: number, to: number) => {
    for (let k = 0; k < value.length; k++) {
      units.push(value.charCodeAt(k));
      start.push(from);
      end.push(to);
    }
  };
  let i = 0;
  while (i < text.length) {
    if (blocked?.[i] === 1) {
      if (units[units.length - 1] !== BREAK) {
        units.push(BREAK);
        start.push(i);
        end.push(i);
      }
      i++;
      continue;
    }
    const cp = text.codePointAt(i) ?? 0;
    if (isSpace(cp)) {
      let j = i + 1;
      while (j < text.length && blocked?.[j] !== 1 && isSpace(text.charCodeAt(j))) j++;
      const before = i > 0 && blocked?.[i - 1] !== 1 ? codePointBefore(text, i) : undefined;
      const after = j < text.length && blocked?.[j] !== 1 ? text.codePointAt(j) : undefined;
      // Between two Han characters the space is optional, so it is no part of the match at all.
      if (!(isHan(before) && isHan(after))) emit(" ", i, j);
      i = j;
      continue;
    }
    const size = cp > 0xffff ? 2 : 1;
    emit(fold(cp), i, i + size);
    i += size;
  }
  if (work !== undefined) work.steps += text.length;
  return { units, start, end };
}

function codePointBefore(text: string, at: number): number | undefined {
  const low = text.charCodeAt(at - 1);
  if (low >= 0xdc00 && low <= 0xdfff && at >= 2) {
    const high = text.charCodeAt(at - 2);
    if (high >= 0xd800 && high <= 0xdbff) return text.codePointAt(at - 2);
  }
  return Number.isNaN(low) ? undefined : low;
}

/** Whether the code point ending before `at` (or starting at `at`) is a Latin letter, digit or _ the match would continue. */
function continuesLatinWord(text: string, at: number, chosen: Chosen, before: boolean): boolean {
  if (at < 0 || at >= text.length || chosen.isMarker(at)) return false;
  const cp = before ? codePointBefore(text, at + 1) : text.codePointAt(at);
  if (cp === undefined) return false;
  if (cp < 0x80) return isDigit(cp) || cp === 0x5f || ((cp | 0x20) >= 0x61 && (cp | 0x20) <= 0x7a);
  return LATIN_WORD_CHAR.test(String.fromCodePoint(cp));
}

/**
 * Digits of the text in order, with a BREAK between two that are not joined by separators only
 * (spaces, brackets, dots, dashes): a phone term matches a run of digits written with any of those.
 */
interface Skeleton {
  readonly digits: number[];
  /** Where each digit is in the text (-1 at a BREAK). */
  readonly at: number[];
}

const isDigit = (code: number): boolean => code >= 0x30 && code <= 0x39;
const isPhoneSeparator = (code: number): boolean =>
  code === 0x28 || code === 0x29 || code === 0x2e || code === 0x2d || isSpace(code);

function digitSkeleton(text: string, blocked: Uint8Array, needed: boolean, work: ScanWork): Skeleton {
  const digits: number[] = [];
  const at: number[] = [];
  if (!needed) return { digits, at };
  let joined = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (blocked[i] !== 1 && isDigit(code)) {
      if (!joined && digits.length > 0) {
        digits.push(BREAK);
        at.push(-1);
      }
      digits.push(code);
      at.push(i);
      joined = true;
    } else if (blocked[i] === 1 || !isPhoneSeparator(code)) joined = false;
  }
  work.steps += text.length;
  return { digits, at };
}

/**
 * The text range of a phone occurrence (skeleton digits first..last), with the country code the term
 * allows, as the leftmost start the old pattern would have taken; undefined when no start works.
 */
function phoneRange(
  text: string,
  skeleton: Skeleton,
  first: number,
  last: number,
  countryCode: boolean,
  chosen: Chosen,
  work: ScanWork,
): readonly [number, number] | undefined {
  const nationalStart = skeleton.at[first] ?? 0;
  const stop = (skeleton.at[last] ?? 0) + 1;
  if (stop < text.length && !chosen.isMarker(stop) && isDigit(text.charCodeAt(stop))) return undefined;
  const starts: number[] = [];
  const six = skeleton.at[first - 1] ?? -1;
  const eight = skeleton.at[first - 2] ?? -1;
  if (countryCode && eight >= 0 && six === eight + 1 && text.charCodeAt(eight) === D8 && text.charCodeAt(six) === D6) {
    if (text.charCodeAt(eight - 1) === D0 && text.charCodeAt(eight - 2) === D0) starts.push(eight - 2);
    if (text.charCodeAt(eight - 1) === 0x2b) starts.push(eight - 1);
    starts.push(eight);
  }
  starts.push(nationalStart);
  for (const start of starts) {
    work.steps++;
    if (chosen.overlaps(start, stop, work)) continue;
    if (start > 0 && !chosen.isMarker(start - 1) && isDigit(text.charCodeAt(start - 1))) continue;
    return [start, stop];
  }
  return undefined;
}

/**
 * The occurrences taken so far, which later ones must not overlap. A Fenwick tree over their starts
 * answers "does any start inside [a, b)" in O(log n).
 */
class Chosen {
  /** The term whose occurrences are being chosen (the one pass of its old pattern). */
  term = 0;
  /** 1 + the term that took each unit, 0 where none did. */
  private readonly takenBy: Int32Array;
  private readonly starts: Int32Array;
  private readonly ranges: [number, number][] = [];

  constructor(private readonly size: number) {
    this.takenBy = new Int32Array(size);
    this.starts = new Int32Array(size + 1);
  }

  /**
   * Whether a look-around at `at` sees a marker: what an earlier term took was replaced before this
   * term's pass, while this term's own occurrences were all found in the text as it was.
   */
  isMarker(at: number): boolean {
    const taker = this.takenBy[at] ?? 0;
    return taker !== 0 && taker !== this.term + 1;
  }

  overlaps(start: number, stop: number, work: ScanWork): boolean {
    if (this.takenBy[start] !== 0 || this.takenBy[stop - 1] !== 0) return true;
    // Only an occurrence taken strictly inside is left, which needs the tree.
    return stop - start > 2 && this.startsBefore(stop - 1, work) - this.startsBefore(start + 1, work) > 0;
  }

  add(start: number, stop: number, work: ScanWork): void {
    this.takenBy.fill(this.term + 1, start, stop);
    work.steps += stop - start;
    for (let i = start + 1; i <= this.size; i += i & -i) {
      this.starts[i] = (this.starts[i] ?? 0) + 1;
      work.steps++;
    }
    this.ranges.push([start, stop]);
  }

  /** How many chosen ranges start before `at`. */
  private startsBefore(at: number, work: ScanWork): number {
    let count = 0;
    for (let i = at; i > 0; i -= i & -i) {
      count += this.starts[i] ?? 0;
      work.steps++;
    }
    return count;
  }

  replace(text: string, marker: string): string {
    if (this.ranges.length === 0) return text;
    this.ranges.sort((a, b) => a[0] - b[0]);
    let out = "";
    let copied = 0;
    for (const [start, stop] of this.ranges) {
      out += text.slice(copied, start) + marker;
      copied = stop;
    }
    return out + text.slice(copied);
  }
}

/** Aho-Corasick over UTF-16 units: every occurrence of every pattern in one pass. */
class Automaton {
  private readonly next: Map<number, number>[] = [new Map()];
  private readonly fail: number[] = [0];
  /** The patterns ending at a node, and the nearest node on its fail chain that ends one. */
  private readonly ends: number[][] = [[]];
  private readonly outputLink: number[] = [-1];

  constructor(patterns: readonly (readonly number[])[], work: ScanWork) {
    const seen = new Set<string>();
    patterns.forEach((pattern, index) => {
      // Two terms that read the same: the first takes every occurrence, the second never gets one.
      const key = pattern.join(",");
      if (seen.has(key)) return;
      seen.add(key);
      let node = 0;
      for (const unit of pattern) {
        work.steps++;
        let child = this.next[node]?.get(unit);
        if (child === undefined) {
          child = this.next.length;
          this.next.push(new Map());
          this.fail.push(0);
          this.ends.push([]);
          this.outputLink.push(-1);
          this.next[node]?.set(unit, child);
        }
        node = child;
      }
      this.ends[node]?.push(index);
    });
    const queue: number[] = [];
    for (const child of this.next[0]?.values() ?? []) queue.push(child);
    for (let head = 0; head < queue.length; head++) {
      const node = queue[head] ?? 0;
      for (const [unit, child] of this.next[node] ?? []) {
        let f = this.fail[node] ?? 0;
        while (f !== 0 && !this.next[f]?.has(unit)) {
          f = this.fail[f] ?? 0;
          work.steps++;
        }
        const failTo = this.next[f]?.get(unit) ?? 0;
        this.fail[child] = failTo;
        this.outputLink[child] = (this.ends[failTo]?.length ?? 0) > 0 ? failTo : (this.outputLink[failTo] ?? -1);
        queue.push(child);
        work.steps++;
      }
    }
  }

  /** Calls `found(pattern index, index of its last unit)` for every occurrence, in text order. */
  scan(units: readonly number[], work: ScanWork, found: (index: number, end: number) => void): void {
    let node = 0;
    for (let i = 0; i < units.length; i++) {
      const unit = units[i] ?? BREAK;
      work.steps++;
      if (unit === BREAK) {
        node = 0;
        continue;
      }
      while (node !== 0 && !this.next[node]?.has(unit)) {
        node = this.fail[node] ?? 0;
        work.steps++;
      }
      node = this.next[node]?.get(unit) ?? 0;
      for (let out = (this.ends[node]?.length ?? 0) > 0 ? node : (this.outputLink[node] ?? -1); out > 0; ) {
        for (const index of this.ends[out] ?? []) {
          work.steps++;
          found(index, i);
        }
        out = this.outputLink[out] ?? -1;
      }
    }
  }
}
