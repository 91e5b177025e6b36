// Stored messages and session views for the domain tests (history window, date anchor): the
// projection's shapes built by hand, one message per seq.
import type { ContentPart, Role, SessionView, StoredMessage } from "../src/domain/model";

/** Freezes a value and everything in it, so a test sees any mutation by the code under test. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

export function text(value: string): ContentPart {
  return { type: "text", text: value };
}

export interface StoredExtra {
  readonly deleted?: boolean;
  /** Default 2026-10-12. */
  readonly localDate?: string;
  /** Default seq * 1000. */
  readonly createdAtMs?: number;
}

/** Message `m<seq>` at `seq`. */
export function stored(
  seq: number,
  role: Role,
  content: readonly ContentPart[],
  extra: StoredExtra = {},
): StoredMessage {
  return {
    messageId: `m${seq}`,
    seq,
    role,
    content,
    localDate: extra.localDate ?? "2026-10-12",
    createdAtMs: extra.createdAtMs ?? seq * 1000,
    deleted: extra.deleted ?? false,
  };
}

/** Main session s1 at generation 0, no summary, holding `messages` (lastSeq is their highest seq). */
export function sessionView(messages: readonly StoredMessage[], overrides: Partial<SessionView> = {}): SessionView {
  return {
    sessionId: "s1",
    kind: "main",
    generation: 0,
    boundaryMessageId: null,
    summary: null,
    messages,
    lastSeq: messages.reduce((max, m) => Math.max(max, m.seq), 0),
    ...overrides,
  };
}
