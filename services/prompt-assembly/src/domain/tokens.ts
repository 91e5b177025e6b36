// A cheap, deterministic token estimate for budgeting before the provider reports real usage.
// Tokenizers give roughly one token per CJK character and about four characters per token for
// Latin text and code; counting the two kinds apart keeps Chinese prompts from being
// underestimated fourfold.

const WIDE_CHARACTER =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Bopomofo}\u3000-\u303f\uff00-\uffef]/u;

export const CHARACTERS_PER_TOKEN = 4;

/** Wide (CJK / fullwidth) code points count one token each; all other code points four per token, rounded up. */
export function estimateTokens(text: string): number {
  let wide = 0;
  let other = 0;
  for (const character of text) {
    if (WIDE_CHARACTER.test(character)) wide += 1;
    else other += 1;
  }
  return wide + Math.ceil(other / CHARACTERS_PER_TOKEN);
}
