import { type Caller, LOCAL_PRINCIPAL } from "@prefix-guard/access";
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
  const store = {
    readView: async (sessionId: string) => {
      reads.push(sessionId);
      return { session, messages: [] };
    },
  } as unknown as SessionViewsOptions["store"];
  const sessions: SessionEventsReader = { readEvents: async () => ({ events: [], lastSeq: 1 }) };
  return { reads, views: new SessionViews({ store, sessions, cacheBytes }) };
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
