// The one change observe mode makes: OpenAI Chat Completions reports usage on a stream only when
// the request sets `stream_options.include_usage`. When a streaming client did not ask for it, the
// gateway asks on its behalf (the request gets the option) and hides what that adds from the client:
// the final chunk that carries the usage (its `choices` is empty) is dropped, and the `"usage":null`
// member that every other chunk then carries is cut out. Everything else stays byte for byte.
//
// Both transforms are pure and work on bytes (json-members), so the body and the chunks keep the
// provider's and the client's own formatting.

import { isJsonSpace, jsonObjectLayout, memberOf, valueText, withoutMember, withValue } from "./json-members";

export interface UsageRequestPlan {
  /**
   * The body to forward, in pieces sent one after the other: the client's own bytes unless
   * `injected` (then slices of them around the added member, so the body is never copied).
   */
  readonly body: readonly Buffer[];
  /** The gateway added include_usage: the stream's usage chunk must be hidden from the client. */
  readonly injected: boolean;
  /** The request asked for a stream (`"stream": true`). */
  readonly stream: boolean;
}

const INCLUDE_USAGE = '{"include_usage":true}';

/**
 * For a Chat Completions body: whether and how to ask for the stream's usage. Decided on the bytes
 * (json-members finds the top-level `stream` and `stream_options` in one pass, a few tens of µs
 * for 85 KiB): this runs before the body is forwarded, where decoding and parsing the whole body
 * would cost ten to a hundred times that. Only a `stream_options` value is parsed, and it is small.
 * A body that is not a JSON object is forwarded unchanged (the provider answers it).
 */
export function planChatStreamUsage(body: Buffer): UsageRequestPlan {
  const unchanged = (stream: boolean): UsageRequestPlan => ({ body: [body], injected: false, stream });
  const layout = jsonObjectLayout(body);
  if (layout === null) return unchanged(false);
  const streamMember = memberOf(layout, "stream");
  if (streamMember === undefined || valueText(body, streamMember) !== "true") return unchanged(false);
  const member = memberOf(layout, "stream_options");
  if (member === undefined) {
    let last = layout.close - 1;
    while (last > 0 && isJsonSpace(body[last])) last -= 1;
    const added = Buffer.from(`${body[last] === 0x7b ? "" : ","}"stream_options":${INCLUDE_USAGE}`);
    return { body: [body.subarray(0, last + 1), added, body.subarray(last + 1)], injected: true, stream: true };
  }
  let options: unknown;
  try {
    options = JSON.parse(valueText(body, member));
  } catch {
    return unchanged(true);
  }
  // Anything but an object (or null) is the provider's to refuse, untouched.
  if (typeof options !== "object" || Array.isArray(options)) return unchanged(true);
  if (options !== null && (options as Record<string, unknown>).include_usage === true) return unchanged(true);
  const merged = options === null ? INCLUDE_USAGE : JSON.stringify({ ...options, include_usage: true });
  return { body: [withValue(body, member, merged)], injected: true, stream: true };
}

const DATA_PREFIX = Buffer.from("data:");

/** How OpenAI ends every chunk of a stream asked for its usage, but the usage chunk itself. */
const NULL_USAGE_LAST = Buffer.from(',"usage":null}');

/**
 * One whole SSE event of a stream whose usage the gateway asked for: the event the client would
 * have received (the same bytes less the `usage` member), or null when it must not see it at all.
 */
export function hideInjectedUsage(event: Buffer): Buffer | null {
  const data = singleDataLine(event);
  if (data === null) return event;
  // Nearly every chunk ends `,"usage":null}`. In JSON text those bytes can only be the object's
  // last member (the quote after the comma opens a key, and the brace is the data's last byte), so
  // the member is cut without walking the chunk: the same bytes withoutMember would leave.
  const tail = data.end - NULL_USAGE_LAST.length;
  if (tail > data.start && event.subarray(tail, data.end).equals(NULL_USAGE_LAST)) {
    let cutStart = tail;
    while (cutStart > data.start && isJsonSpace(event[cutStart - 1])) cutStart -= 1;
    return Buffer.concat([event.subarray(0, cutStart), event.subarray(data.end - 1)]);
  }
  return hideUsageByLayout(event, data);
}

/** hideInjectedUsage read from the event's layout; exported so a test holds the shortcut to it. */
export function hideUsageByLayout(event: Buffer, data = singleDataLine(event)): Buffer | null {
  if (data === null) return event;
  const layout = jsonObjectLayout(event, data.start, data.end);
  if (layout === null) return event;
  const usage = memberOf(layout, "usage");
  if (usage === undefined) return event;
  const usageIsNull = valueText(event, usage) === "null";
  if (!usageIsNull) {
    const choices = memberOf(layout, "choices");
    // The added chunk: usage and no choices. A provider that puts usage on a content chunk keeps
    // the chunk, without the usage.
    if (choices === undefined || /^\[\s*\]$/.test(valueText(event, choices))) return null;
  }
  return withoutMember(event, layout, usage);
}

/** Offset of the CR or LF that ends the line starting at `from` (found natively: a chunk's line is long). */
function lineEndOf(event: Buffer, from: number): number {
  const lf = event.indexOf(0x0a, from);
  const end = lf === -1 ? event.length : lf;
  const cr = event.indexOf(0x0d, from);
  return cr !== -1 && cr < end ? cr : end;
}

/** Where the one `data:` line's value is in the event; null for none, several or a `[DONE]`. */
function singleDataLine(event: Buffer): { start: number; end: number } | null {
  let found: { start: number; end: number } | null = null;
  let lineStart = 0;
  while (lineStart < event.length) {
    const lineEnd = lineEndOf(event, lineStart);
    if (lineEnd > lineStart && event.subarray(lineStart, lineStart + DATA_PREFIX.length).equals(DATA_PREFIX)) {
      if (found !== null) return null;
      let start = lineStart + DATA_PREFIX.length;
      if (event[start] === 0x20) start += 1;
      found = { start, end: lineEnd };
    }
    lineStart = lineEnd + 1;
  }
  if (found === null || event[found.start] !== 0x7b) return null;
  return found;
}
