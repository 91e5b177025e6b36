import { type Caller, LOCAL_PRINCIPAL } from "@prefix-guard/access";
import { encodeSessionEvent, newEventId } from "@prefix-guard/events";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { describe, expect, it } from "vitest";
import { type ProjectedSession, viewOf } from "../../domain/session-projection";
import type { SessionEventsReader } from "../session-projection";
import { estimateViewBytes, SessionViews, type SessionViewsOptions } from "./session-views";

const caller: Caller = { principal: LOCAL_PRINCIPAL, role: "operator" };

const session: ProjectedSession = {
  kind: "main",
  timezone: "UTC",
  workspace: "/ws",
  locale: "en",
  owner: "o",
  scope: "",
  generation: 0,
  boundaryMessageId: null,
  summary: null,
  lastSeq: 1,
  deleted: false,
  ended: false,
};
/** Every session's view weighs the same: no messages, the same timezone. */
const VIEW_BYTES = estimateViewBytes(viewOf("any", session, []));

/** Views over a store that counts its reads, and a session-events with nothing newer. */
function views(cacheBytes: number) {
  const reads: string[] = [];
  const eventReads: string[] = [];
  const store = {
    readView: async (sessionId: string) => {
      reads.push(sessionId);
      return { session, messages: [] };
    },
  } as unknown as SessionViewsOptions["store"];
  const sessions: SessionEventsReader = {
    readEvents: async (sessionId) => {
      eventReads.push(sessionId);
      return { events: [], lastSeq: 1 };
    },
  };
  return { reads, eventReads, views: new SessionViews({ store, sessions, cacheBytes }) };
}

describe("SessionViews memory", () => {
  it("serves a held view without reading it, and keeps the views within the byte budget, least recently used out", async () => {
    const { reads, views: held } = views(2 * VIEW_BYTES);
    await held.load("a", 1, caller);
    await held.load("b", 1, caller);
    await held.load("a", 1, caller); // a hit: now more recent than b
    await held.load("c", 1, caller); // evicts b
    expect(reads).toEqual(["a", "b", "c"]);
    await held.load("b", 1, caller); // read again; evicts a
    await held.load("c", 1, caller);
    expect(reads).toEqual(["a", "b", "c", "b"]);
    expect(held.stats()).toEqual({ sessions: 2, bytes: 2 * VIEW_BYTES, budgetBytes: 2 * VIEW_BYTES });
  });

  it("peek does not count as a use", async () => {
    const { views: held } = views(2 * VIEW_BYTES);
    await held.load("a", 1, caller);
    await held.load("b", 1, caller);
    expect(held.peek("a")?.sessionId).toBe("a");
    await held.load("c", 1, caller);
    expect(held.peek("a")).toBeUndefined();
    expect(held.peek("b")?.sessionId).toBe("b");
  });

  it("forgets a view and its bytes", async () => {
    const { reads, views: held } = views(2 * VIEW_BYTES);
    await held.load("a", 1, caller);
    held.forget("a");
    expect(held.stats()).toEqual({ sessions: 0, bytes: 0, budgetBytes: 2 * VIEW_BYTES });
    await held.load("a", 1, caller);
    expect(reads).toEqual(["a", "a"]);
  });

  it("holds nothing with a budget of 0: every build reads its view", async () => {
    const { reads, views: held } = views(0);
    await held.load("a", 1, caller);
    await held.load("a", 1, caller);
    expect(reads).toEqual(["a", "a"]);
    expect(held.stats()).toEqual({ sessions: 0, bytes: 0, budgetBytes: 0 });
  });
});

/** A MessageSaved as session-events stores and follows it (plaintext, schema 1). */
function followed(sessionId: string, seq: number, text: string) {
  const event = encodeSessionEvent({
    eventId: newEventId(1_700_000_000_000),
    sessionId,
    seq,
    occurredAtMs: 1_760_284_200_000,
    schemaVersion: 1,
    type: "MessageSaved",
    payload: {
      $case: "messageSaved",
      value: {
        messageId: `m${seq}`,
        role: Role.ROLE_USER,
        content: [{ part: { $case: "text", value: { text } } }],
        thinkingChars: 0,
        localDate: "2026-10-12",
      },
    },
  });
  return { sessionId, seq, event };
}

describe("SessionViews extended by followed events", () => {
  it("applies the next event to a held view, so a build at its seq reads nothing", async () => {
    const { reads, eventReads, views: held } = views(4 * VIEW_BYTES);
    await held.load("a", 1, caller);
    expect(await held.extendHeld([followed("a", 2, "hello")])).toEqual(["extended"]);
    const view = await held.load("a", 2, caller);
    expect(view.lastSeq).toBe(2);
    expect(view.messages.map((m) => m.content)).toEqual([[{ type: "text", text: "hello" }]]);
    // One read of the stored view and one catch-up at the first load; none for the build at seq 2.
    expect(reads).toEqual(["a"]);
    expect(eventReads).toEqual(["a"]);
  });

  it("changes nothing for a session not held, an event that is not the next, a repeat or unreadable bytes", async () => {
    const { views: held } = views(4 * VIEW_BYTES);
    await held.load("a", 1, caller);
    const before = held.peek("a");
    expect(
      await held.extendHeld([
        followed("b", 2, "other session"),
        followed("a", 3, "a gap"),
        followed("a", 1, "a repeat"),
        { sessionId: "a", seq: 2, event: new Uint8Array([1, 2, 3]) },
        // The envelope names another session than the feed says.
        { ...followed("b", 2, "x"), sessionId: "a" },
      ]),
    ).toEqual(["not_held", "not_next", "not_next", "unreadable", "unreadable"]);
    expect(held.peek("a")).toBe(before);
    expect(held.peek("b")).toBeUndefined();
  });

  it("applies consecutive events of one batch in order", async () => {
    const { views: held } = views(4 * VIEW_BYTES);
    await held.load("a", 1, caller);
    // Only the first is next when the batch is looked at; the second is then next after it.
    const outcomes = await held.extendHeld([followed("a", 2, "one"), followed("a", 3, "two")]);
    expect(outcomes).toEqual(["extended", "not_next"]);
    expect(held.peek("a")?.lastSeq).toBe(2);
  });

  it("applies batches in arrival order even while an earlier one is still opening its content", async () => {
    const { views: held } = views(4 * VIEW_BYTES);
    await held.load("a", 1, caller);
    const first = held.extendHeld([followed("a", 2, "one")]);
    const second = held.extendHeld([followed("a", 3, "two")]);
    expect(await first).toEqual(["extended"]);
    expect(await second).toEqual(["extended"]);
    expect(held.peek("a")?.lastSeq).toBe(3);
  });

  it("a catch-up that finishes after followed events moved the view further does not move it back", async () => {
    let release: () => void = () => undefined;
    let gated = false;
    const store = {
      readView: async () => ({ session, messages: [] }),
    } as unknown as SessionViewsOptions["store"];
    const sessions: SessionEventsReader = {
      readEvents: async () => {
        if (gated) await new Promise<void>((resolve) => (release = resolve));
        return { events: [], lastSeq: 1 };
      },
    };
    const held = new SessionViews({ store, sessions, cacheBytes: 4 * VIEW_BYTES });
    await held.load("a", 1, caller);
    gated = true;
    // min_seq 0: asks session-events, whose answer (nothing past seq 1) arrives after seq 2 was followed.
    const loading = held.load("a", 0, caller);
    await new Promise((resolve) => setImmediate(resolve));
    expect(await held.extendHeld([followed("a", 2, "hello")])).toEqual(["extended"]);
    release();
    expect((await loading).lastSeq).toBe(1);
    expect(held.peek("a")?.lastSeq).toBe(2);
  });
});
