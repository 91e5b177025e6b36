/** String measures used for quotas and caps; pure and independent of any runtime Buffer. */

/** Code points, so one 汉字 or one emoji counts as one character. */
export function codePointLength(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/** Bytes of the UTF-8 encoding; a lone surrogate counts as the 3-byte replacement character. */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

// With the `u` flag a surrogate class only matches a surrogate that is not part of a pair.
const loneSurrogate = /[\uD800-\uDFFF]/u;

/** False when the string is not valid UTF-16 (it could not be stored or sent as UTF-8 unchanged). */
export function isWellFormedText(text: string): boolean {
  return !loneSurrogate.test(text);
}

/** The first `max` code points, never splitting a surrogate pair. */
export function truncateCodePoints(text: string, max: number): string {
  if (text.length <= max) return text;
  let count = 0;
  let end = 0;
  while (end < text.length && count < max) {
    const unit = text.charCodeAt(end);
    const next = text.charCodeAt(end + 1);
    end += unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff ? 2 : 1;
    count++;
  }
  return text.slice(0, end);
}
