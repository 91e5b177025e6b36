// A request body's top-level members and the elements of its block arrays, found in one pass over
// its bytes, and found again for the next body without walking what the two share.
//
// An agent's request is the previous one with a turn added or edited: the bytes before the change
// (the common prefix) and after it (the common suffix: for OpenAI's key order, `],"tools":[…]}`)
// are the earlier body's. Both are found natively (memcmp in blocks), and the walk resumes where
// the prefix ends:
// - members and elements that end inside the prefix are the earlier ones, at the same offsets;
// - a member key (or an array element) that starts inside the suffix where the earlier body had
//   one is where the two walks meet: a walk is a function of its state (which object or array, at
//   a member or element boundary) and of the bytes left, and both are the same from there on, so
//   everything after is the earlier walk's, shifted by the difference in length.
// What a walk finds never depends on which earlier body is given (or whether any is): the shortcut
// only skips bytes whose walk is known. body-scan.unit.test.ts holds resumed walks to fresh ones.
//
// Like json-members, the walk trusts the bytes to be JSON: it tracks strings, escapes and nesting,
// and answers null for a shape it cannot walk.

import { type JsonMember, type JsonSpan, jsonMemberHead, jsonValueEnd, skipJsonSpace } from "./json-members";

const QUOTE = 0x22;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

export interface ScannedMember extends JsonMember {
  /** The array's elements, for a member whose key was asked to be walked and whose value is an array; else null. */
  readonly elements: readonly JsonSpan[] | null;
}

export interface ObjectScan {
  readonly members: readonly ScannedMember[];
  readonly open: number;
  readonly close: number;
}

/** An earlier body's scan (by the same `walk`) and the bytes this body shares with it, to resume from. */
export interface EarlierScan {
  readonly scan: ObjectScan;
  readonly shared: SharedBytes;
}

/** What the two bodies share: `prefix` bytes at the start, and every byte from `suffixStart` on. */
export interface SharedBytes {
  readonly prefix: number;
  /** In the new body; the earlier body has the same bytes from `suffixStart - delta`. */
  readonly suffixStart: number;
  /** The new body's length less the earlier one's. */
  readonly delta: number;
}

/**
 * Bytes compared per native call, largest first: whole blocks while they match, then smaller ones
 * narrow the first difference down (a byte loop over 85 KiB would cost twenty times the memcmp).
 */
const COMPARE_BLOCKS = [4096, 512, 64, 8, 1] as const;

/** How many bytes `a` and `b` share from their starts. */
export function commonPrefixLength(a: Buffer, b: Buffer): number {
  const limit = Math.min(a.length, b.length);
  let at = 0;
  for (const block of COMPARE_BLOCKS)
    while (at + block <= limit && a.compare(b, at, at + block, at, at + block) === 0) at += block;
  return at;
}

/** How many bytes `a` and `b` share at their ends, at most `limit`. */
export function commonSuffixLength(a: Buffer, b: Buffer, limit: number): number {
  let length = 0;
  for (const block of COMPARE_BLOCKS)
    while (
      length + block <= limit &&
      a.compare(b, b.length - length - block, b.length - length, a.length - length - block, a.length - length) === 0
    )
      length += block;
  return length;
}

/** The bytes `bytes` shares with `earlier`, the prefix and the suffix never overlapping in either. */
export function sharedBytes(earlier: Buffer, bytes: Buffer): SharedBytes {
  const prefix = commonPrefixLength(earlier, bytes);
  const suffix = commonSuffixLength(earlier, bytes, Math.min(earlier.length, bytes.length) - prefix);
  return { prefix, suffixStart: bytes.length - suffix, delta: bytes.length - earlier.length };
}

const shiftSpan = (span: JsonSpan, delta: number): JsonSpan => ({ start: span.start + delta, end: span.end + delta });

function shiftMember(member: ScannedMember, delta: number): ScannedMember {
  return {
    key: member.key,
    keyStart: member.keyStart + delta,
    valueStart: member.valueStart + delta,
    valueEnd: member.valueEnd + delta,
    elements: member.elements === null ? null : member.elements.map((element) => shiftSpan(element, delta)),
  };
}

/** Where the walk is: at a value's start (or the container's first), or just past a value. */
type WalkState = "before" | "after";

/** The resumption context: the bytes shared and where the earlier walk put its boundaries. */
class Resumption {
  constructor(
    readonly earlier: ObjectScan,
    readonly shared: SharedBytes,
    private readonly bytes: Buffer,
  ) {}

  /** Whether the value ending at `end` was walked on shared bytes only (its end is known from them). */
  endsInPrefix(end: number): boolean {
    if (end < this.shared.prefix) return true;
    if (end !== this.shared.prefix) return false;
    // A string or a container ends at its own closing byte; a scalar ends at the byte after it.
    const last = this.bytes[end - 1];
    return last === QUOTE || last === CLOSE_BRACE || last === CLOSE_BRACKET;
  }

  /** The earlier member whose key started where this one, shifted, starts in the shared suffix. */
  memberMeetingAt(keyStart: number): number {
    if (keyStart < this.shared.suffixStart) return -1;
    return indexByStart(this.earlier.members, keyStart - this.shared.delta, (member) => member.keyStart);
  }
}

/** The index of the item starting at `start` in a list sorted by start, or -1 (binary search). */
function indexByStart<T>(items: readonly T[], start: number, startOf: (item: T) => number): number {
  let low = 0;
  let high = items.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const at = startOf(items[middle] as T);
    if (at === start) return middle;
    if (at < start) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
}

/** Where an array's walk ended: its elements and end, and whether it met the earlier walk's. */
interface ArrayWalk {
  readonly elements: JsonSpan[];
  readonly end: number;
  /** The earlier walk was met inside this array: every member after it is the earlier one's, shifted. */
  readonly met: boolean;
}

/**
 * The elements of an array, walked from `index` on in `state` with `elements` found so far; null when they are not an array the walk can follow.
 */
function walkArray(
  bytes: Buffer,
  start: { readonly index: number; readonly state: WalkState; readonly elements: JsonSpan[] },
  meeting: { readonly resumption: Resumption; readonly earlier: ScannedMember } | null,
): ArrayWalk | null {
  const end = bytes.length;
  const { elements } = start;
  let index = start.index;
  let state = start.state;
  for (;;) {
    index = skipJsonSpace(bytes, index, end);
    if (state === "after") {
      if (bytes[index] === CLOSE_BRACKET) return { elements, end: index + 1, met: false };
      if (bytes[index] !== COMMA) return null;
      index = skipJsonSpace(bytes, index + 1, end);
    } else if (bytes[index] === CLOSE_BRACKET) {
      // Only an array's first position is walked in state "before": an empty array.
      return { elements, end: index + 1, met: false };
    }
    if (meeting !== null && index >= meeting.resumption.shared.suffixStart) {
      const earlierElements = meeting.earlier.elements ?? [];
      const { delta } = meeting.resumption.shared;
      const at = indexByStart(earlierElements, index - delta, (element) => element.start);
      if (at !== -1) {
        for (let rest = at; rest < earlierElements.length; rest += 1)
          elements.push(shiftSpan(earlierElements[rest] as JsonSpan, delta));
        return { elements, end: meeting.earlier.valueEnd + delta, met: true };
      }
    }
    const stop = jsonValueEnd(bytes, index, end);
    if (stop === -1) return null;
    elements.push({ start: index, end: stop });
    index = stop;
    state = "after";
  }
}

/**
 * The body's top-level members, with the elements of the array-valued ones `walk` names, or null
 * when the bytes are not an object the walk can follow. With `earlier` (scanned with the same
 * `walk`; `shared` from sharedBytes), the bytes the two share are not walked again.
 */
export function scanBody(bytes: Buffer, walk: (key: string) => boolean, earlier?: EarlierScan): ObjectScan | null {
  const end = bytes.length;
  const members: ScannedMember[] = [];
  const resumption = earlier === undefined ? null : new Resumption(earlier.scan, earlier.shared, bytes);
  let open: number;
  let index: number;
  let state: WalkState = "before";
  /** The earlier member a resumed walk is inside of (an array it continues), if any. */
  let resumedArray: { member: ScannedMember; walk: ArrayWalk | null } | null = null;
  if (resumption !== null && resumption.earlier.open < resumption.shared.prefix) {
    const earlierMembers = resumption.earlier.members;
    open = resumption.earlier.open;
    let next = 0;
    while (next < earlierMembers.length && resumption.endsInPrefix((earlierMembers[next] as ScannedMember).valueEnd)) {
      members.push(earlierMembers[next] as ScannedMember);
      next += 1;
    }
    index = next === 0 ? open + 1 : (earlierMembers[next - 1] as ScannedMember).valueEnd;
    state = next === 0 ? "before" : "after";
    const partial = earlierMembers[next];
    // The walk resumes inside the array the prefix ends in: its key and `[` are shared.
    if (partial !== undefined && partial.elements !== null && partial.valueStart < resumption.shared.prefix) {
      const kept: JsonSpan[] = [];
      for (const element of partial.elements) {
        if (!resumption.endsInPrefix(element.end)) break;
        kept.push(element);
      }
      const last = kept[kept.length - 1];
      resumedArray = {
        member: partial,
        walk: walkArray(
          bytes,
          {
            index: last === undefined ? partial.valueStart + 1 : last.end,
            state: last === undefined ? "before" : "after",
            elements: kept,
          },
          { resumption, earlier: partial },
        ),
      };
    }
  } else {
    index = skipJsonSpace(bytes, 0, end);
    if (bytes[index] !== OPEN_BRACE) return null;
    open = index;
    index += 1;
  }

  const finish = (close: number): ObjectScan | null =>
    skipJsonSpace(bytes, close + 1, end) === end ? { members, open, close } : null;
  /** Every member from the earlier one at `from` on, shifted: the walks met. */
  const meet = (from: number): ObjectScan => {
    const { earlier: earlierScan, shared } = resumption as Resumption;
    for (let rest = from; rest < earlierScan.members.length; rest += 1)
      members.push(shiftMember(earlierScan.members[rest] as ScannedMember, shared.delta));
    return { members, open, close: earlierScan.close + shared.delta };
  };

  if (resumedArray !== null) {
    const { member, walk: walked } = resumedArray;
    // An array that cannot be walked on from here is walked whole, as a fresh scan would.
    const elements = walked === null ? null : walked.elements;
    const valueEnd = walked === null ? jsonValueEnd(bytes, member.valueStart, end) : walked.end;
    if (valueEnd === -1) return null;
    members.push({ key: member.key, keyStart: member.keyStart, valueStart: member.valueStart, valueEnd, elements });
    if (walked?.met === true) return meet(members.length);
    index = valueEnd;
    state = "after";
  }

  for (;;) {
    index = skipJsonSpace(bytes, index, end);
    if (state === "after") {
      if (bytes[index] === CLOSE_BRACE) return finish(index);
      if (bytes[index] !== COMMA) return null;
      index = skipJsonSpace(bytes, index + 1, end);
    } else if (bytes[index] === CLOSE_BRACE && members.length === 0) {
      return finish(index);
    }
    if (resumption !== null && index < end) {
      const at = resumption.memberMeetingAt(index);
      if (at !== -1) return meet(at);
    }
    const head = jsonMemberHead(bytes, index, end);
    if (head === null) return null;
    const { key, keyStart, valueStart } = head;
    let elements: JsonSpan[] | null = null;
    let valueEnd = -1;
    if (bytes[valueStart] === OPEN_BRACKET && walk(key)) {
      const walked = walkArray(bytes, { index: valueStart + 1, state: "before", elements: [] }, null);
      if (walked !== null) {
        elements = walked.elements;
        valueEnd = walked.end;
      }
    }
    if (elements === null) valueEnd = jsonValueEnd(bytes, valueStart, end);
    if (valueEnd === -1) return null;
    members.push({ key, keyStart, valueStart, valueEnd, elements });
    index = valueEnd;
    state = "after";
  }
}
