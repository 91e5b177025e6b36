// Limits on the shape of JSON text a service accepts (tool arguments, tool schemas, provider usage
// objects), checked before JSON.parse. JSON.parse itself copes with any nesting, but what runs on the
// parsed value afterwards does not: canonical JSON, JSON.stringify and the wire-format writers recurse
// once per level, so a 1 MB "[[[[…" would exhaust the stack there (an INTERNAL error, or worse, on a
// later build of the stored message). A depth cap turns that into INVALID_ARGUMENT at the door.
//
// The scan is one pass over the text, O(length), and reads only what decides structure: brackets and
// commas outside strings. It does not validate the JSON; JSON.parse still does that afterwards.

import { ValidationError } from "@prefix-guard/errors";

/**
 * Deepest nesting of arrays and objects accepted. Real tool schemas and arguments stay below 10
 * levels; 64 leaves room for generated schemas while keeping every recursive walk shallow.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Most elements accepted in one JSON text, counted as one plus every array, object and comma outside
 * strings (the number of values, when no container is empty). Each is a heap object or slot when
 * parsed and a step of every walk over it, on every build that re-serializes it; 100,000 is far above
 * a real tool call and still cheap.
 */
export const MAX_JSON_ELEMENTS = 100_000;

export interface JsonLimits {
  readonly maxDepth: number;
  readonly maxElements: number;
}

export const DEFAULT_JSON_LIMITS: JsonLimits = { maxDepth: MAX_JSON_DEPTH, maxElements: MAX_JSON_ELEMENTS };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const COMMA = 0x2c;

/**
 * Refuses a JSON text nested deeper than `limits.maxDepth` (reason `json_too_deep`) or with more than
 * `limits.maxElements` elements (reason `json_too_many_elements`), naming `field`. Stops at the first
 * level past the limit, so a hostile text costs no more than the part of it that was read.
 * @throws ValidationError
 */
export function checkJsonLimits(text: string, field: string, limits: JsonLimits = DEFAULT_JSON_LIMITS): void {
  let depth = 0;
  let elements = text.length > 0 ? 1 : 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      // An escape swallows the next character, so \" and \\ never end or start a string.
      if (code === BACKSLASH) i++;
      else if (code === QUOTE) inString = false;
      continue;
    }
    if (code === QUOTE) inString = true;
    else if (code === OPEN_BRACKET || code === OPEN_BRACE) {
      depth++;
      elements++;
      if (depth > limits.maxDepth) {
        throw new ValidationError(field, `JSON nests deeper than ${limits.maxDepth} levels`, {
          reason: "json_too_deep",
        });
      }
    } else if (code === CLOSE_BRACKET || code === CLOSE_BRACE) {
      if (depth > 0) depth--;
    } else if (code === COMMA) elements++;
    if (elements > limits.maxElements) {
      throw new ValidationError(field, `JSON has more than ${limits.maxElements} elements`, {
        reason: "json_too_many_elements",
      });
    }
  }
}
