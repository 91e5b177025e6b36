// What stabilize mode remembers of a session between its requests, so the next request is made
// byte-identical where the previous one was: the first value of each volatile span of the system
// prompt, and which user message got which <date-change> notice. Small and bounded (a few dozen
// short entries); it holds span values and notice texts, never a message, and never leaves memory.

/** The first value seen of one volatile span occurrence. */
export interface PinnedSpan {
  /** Pattern index, the text before the span on its line (≤ 32 characters, pinned), and the ordinal among equal keys. */
  readonly key: string;
  readonly value: string;
}

/** A <date-change> notice put on a user message, re-rendered byte for byte whenever that message is re-sent. */
export interface DateChangeNotice {
  /** The message's index in the conversation when it got the notice. */
  readonly index: number;
  /** Its identity (body.ts messageIdentity): the client re-sends it unchanged. */
  readonly message: string;
  /** The date announced, YYYY-MM-DD. */
  readonly date: string;
  /** The notice as sent (its locale fixed when it was first written). */
  readonly text: string;
}

export interface SessionStabilizationState {
  readonly pins: readonly PinnedSpan[];
  /** Oldest first. */
  readonly notices: readonly DateChangeNotice[];
}

export const EMPTY_STABILIZATION_STATE: SessionStabilizationState = { pins: [], notices: [] };

/** Spans pinned per session; later new ones are left as they are. */
export const MAX_PINNED_SPANS = 32;
/** Longest span value pinned (a longer match is left as it is). */
export const MAX_PINNED_VALUE_CHARS = 200;
/** Notices remembered per session: one per day a long session crossed; the oldest is forgotten first. */
export const MAX_NOTICES = 64;
