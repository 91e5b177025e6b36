// A cheap, deterministic token estimate for budgeting before the provider reports real usage.
// Tokenizers give roughly one token per CJK character and about four characters per token for
// Latin text and code; counting the two kinds apart keeps Chinese prompts from being
// underestimated fourfold.
//
// The estimate runs over every body on the build path, so it reads a table instead of testing a
// Unicode-property regex per character. The table is filled from that same regex once per process,
// so the two can never disagree (tokens.unit.test.ts checks every code point).

/** What counts as one token by itself: CJK scripts, CJK punctuation and the fullwidth forms. */
export const WIDE_CHARACTER =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Bopomofo}\u3000-\u303f\uff00-\uffef]/u;

export const CHARACTERS_PER_TOKEN = 4;

/** 1 for a wide BMP code unit. Lone surrogates are "other", as the regex says. */
const WIDE_BMP = new Uint8Array(0x10000);
for (let code = 0; code < 0x10000; code += 1) {
  if (WIDE_CHARACTER.test(String.fromCharCode(code))) WIDE_BMP[code] = 1;
}

/** Astral code points seen so far (Han extensions, emoji ...): rare, so tested once each and remembered. */
const wideAstral = new Map<number, boolean>();
const MAX_REMEMBERED_ASTRAL = 4096;

function isWideAstral(codePoint: number): boolean {
  let wide = wideAstral.get(codePoint);
  if (wide === undefined) {
    wide = WIDE_CHARACTER.test(String.fromCodePoint(codePoint));
    // Bounded: an adversarial text of distinct astral characters must not grow memory without limit.
    if (wideAstral.size < MAX_REMEMBERED_ASTRAL) wideAstral.set(codePoint, wide);
  }
  return wide;
}

/** Wide and other code points of a text; additive over concatenation, so parts can be counted apart. */
export interface TokenUnits {
  readonly wide: number;
  readonly other: number;
}

export function countTokenUnits(text: string): TokenUnits {
  let wide = 0;
  let other = 0;
  const length = text.length;
  for (let index = 0; index < length; index += 1) {
    const code = text.charCodeAt(index);
    if (code >= 0xd800 && code <= 0xdbff && index + 1 < length) {
      const low = text.charCodeAt(index + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        if (isWideAstral((code - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000)) wide += 1;
        else other += 1;
        index += 1;
        continue;
      }
    }
    if (WIDE_BMP[code] === 1) wide += 1;
    else other += 1;
  }
  return { wide, other };
}

export function tokensOfUnits(units: TokenUnits): number {
  return units.wide + Math.ceil(units.other / CHARACTERS_PER_TOKEN);
}

/** Wide (CJK / fullwidth) code points count one token each; all other code points four per token, rounded up. */
export function estimateTokens(text: string): number {
  return tokensOfUnits(countTokenUnits(text));
}
