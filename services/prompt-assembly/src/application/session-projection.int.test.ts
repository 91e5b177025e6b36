import { LOCAL_HARNESS } from "@prefix-guard/access";
import { FailedPreconditionError, NotFoundError, ValidationError } from "@prefix-guard/errors";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FakeSessionEvents,
  FixedClock,
  messageIdOf,
  STORES,
  shanghai,
  type TestStore,
} from "../../test/application-fixtures";
import { ProjectionStore } from "../adapters/mysql/projection-store";
import { SessionViews } from "./build-request/session-views";
import { SessionProjection } from "./session-projection";

const T0 = shanghai("2026-10-12", "09:00");

describe.each(STORES)("SessionProjection on $name", ({ open }) => {
  let store: TestStore;
  const clock = new FixedClock(T0);
  let sessionCounter = 0;
  const nextSessionId = () => `proj-${++sessionCounter}`;
  const projection = (pageSize?: number) =>
    new SessionProjection({
      store: new ProjectionStore(store.db),
      now: clock.now,
      ...(pageSize === undefined ? {} : { pageSize }),
    });
  /** The session as the stored projection has it (views that read nothing from session-events). */
  const noEvents = { readEvents: async () => ({ events: [], lastSeq: 0 }) };
  const loadSessionView = (sessionId: string) =>
    new SessionViews({ store: new ProjectionStore(store.db), sessions: noEvents, cacheBytes: 0 }).load(
      sessionId,
      0,
      LOCAL_HARNESS,
    );

  beforeAll(async () => {
    store = await open("pa_projection");
  });
  afterAll(async () => store.close());

  async function applyAll(target: SessionProjection, events: readonly SessionEvent[]) {
    const outcomes = [];
    for (const event of events) outcomes.push(await target.applySessionEvent(event));
    return outcomes;
  }

  /** A session with a created event, two user turns and an assistant reply (not yet delivered). */
  async function writeConversation(log: FakeSessionEvents, sessionId: string) {
    await log.createSession(sessionId, { atMs: T0, timezone: "America/New_York", inheritedSummary: "上次聊到压测" });
    const first = await log.saveMessage(sessionId, { atMs: T0 + 1_000, role: "user", content: "第一条" });
    await log.saveMessage(sessionId, { atMs: T0 + 2_000, role: "assistant", content: "好的" });
    await log.saveMessage(sessionId, { atMs: T0 + 3_000, role: "user", content: "第二条" });
    return first;
  }

  it("keeps kind, timezone, inherited summary and every message with its stored local date", async () => {
    const log = new FakeSessionEvents();
    const sessionId = nextSessionId();
    await writeConversation(log, sessionId);
    const target = projection();
    expect(await applyAll(target, log.events(sessionId))).toEqual(["applied", "applied", "applied", "applied"]);

    const view = await loadSessionView(sessionId);
    expect(view).toMatchObject({
      sessionId,
      kind: "main",
      timezone: "America/New_York",
      generation: 0,
      boundaryMessageId: null,
      summary: "上次聊到压测",
      lastSeq: 4,
    });
    // 09:00 in Shanghai is the previous evening in New York: the writer's date is kept, not recomputed.
    expect(view.messages.map((message) => [message.seq, message.role, message.localDate, message.deleted])).toEqual([
      [2, "user", "2026-10-11", false],
      [3, "assistant", "2026-10-11", false],
      [4, "user", "2026-10-11", false],
    ]);
    expect(view.messages[0]?.content).toEqual([{ type: "text", text: "第一条" }]);
    expect(view.messages[0]?.createdAtMs).toBe(T0 + 1_000);
    expect(await target.projectionSeq(sessionId)).toBe(4);
  });

  it("is idempotent under redelivery: applying every event twice gives the same state", async () => {
    const log = new FakeSessionEvents();
    const sessionId = nextSessionId();
    const first = await writeConversation(log, sessionId);
    await log.deleteMessage(sessionId, messageIdOf(first), T0 + 4_000);
    await log.commitCompaction(sessionId, {
      atMs: T0 + 5_000,
      generation: 1,
      boundaryMessageId: `${sessionId}:m3`,
      summary: "摘要一",
    });
    const target = projection();
    await applyAll(target, log.events(sessionId));
    const once = await loadSessionView(sessionId);

    const outcomes = await applyAll(target, log.events(sessionId));
    expect(outcomes.every((outcome) => outcome === "duplicate")).toBe(true);
    // A redelivered prefix of the log followed by the rest is also harmless.
    await applyAll(target, log.events(sessionId).slice(2));
    const twice = await loadSessionView(sessionId);
    expect(twice).toEqual(once);
    expect(twice.messages).toHaveLength(3);
    expect(twice.messages[0]?.deleted).toBe(true);
    expect(twice).toMatchObject({ generation: 1, boundaryMessageId: `${sessionId}:m3`, summary: "摘要一", lastSeq: 6 });
  });

  it("reports a gap without applying it, then catches up through ReadEvents", async () => {
    const log = new FakeSessionEvents();
    const sessionId = nextSessionId();
    await writeConversation(log, sessionId);
    const [created, m2, m3, m4] = log.events(sessionId);
    if (created === undefined || m2 === undefined || m3 === undefined || m4 === undefined) throw new Error("log");
    const target = projection();
    await applyAll(target, [created, m2]);

    expect(await target.applySessionEvent(m4)).toBe("gap");
    expect((await loadSessionView(sessionId)).messages.map((message) => message.seq)).toEqual([2]);
    expect(await target.projectionSeq(sessionId)).toBe(2);

    expect(await target.applyOrCatchUp([m4], log)).toEqual(["applied"]);
    expect(log.readCalls).toBe(1);
    const view = await loadSessionView(sessionId);
    expect(view.messages.map((message) => message.seq)).toEqual([2, 3, 4]);
    expect(view.lastSeq).toBe(4);
    // The late delivery of the missing event is now a duplicate.
    expect(await target.applySessionEvent(m3)).toBe("duplicate");
  });

  it("a catch-up racing the consumer applies every event exactly once", async () => {
    for (let round = 0; round < 5; round += 1) {
      const log = new FakeSessionEvents();
      const sessionId = nextSessionId();
      await writeConversation(log, sessionId);
      const consumer = projection();
      const catchUp = projection(1);
      await Promise.all([applyAll(consumer, log.events(sessionId)), catchUp.catchUp(sessionId, log)]);
      const view = await loadSessionView(sessionId);
      expect(view.lastSeq).toBe(4);
      expect(view.messages.map((message) => message.seq)).toEqual([2, 3, 4]);
    }
  });

  it("catches up page by page from the projection's position", async () => {
    const log = new FakeSessionEvents();
    const sessionId = nextSessionId();
    await log.createSession(sessionId, { atMs: T0 });
    for (let index = 0; index < 6; index += 1) {
      await log.saveMessage(sessionId, {
        atMs: T0 + index,
        role: index % 2 === 0 ? "user" : "assistant",
        content: `m${index}`,
      });
    }
    const target = projection(2);
    await applyAll(target, log.events(sessionId).slice(0, 1));
    expect(await target.catchUp(sessionId, log)).toBe(7);
    expect(log.readCalls).toBe(3);
    expect((await loadSessionView(sessionId)).messages.map((message) => message.content)).toEqual(
      [0, 1, 2, 3, 4, 5].map((index) => [{ type: "text", text: `m${index}` }]),
    );
    // Nothing new: one read, position unchanged.
    expect(await target.catchUp(sessionId, log)).toBe(7);
    expect(log.readCalls).toBe(4);
  });

  it("stores every content part type byte for byte", async () => {
    const log = new FakeSessionEvents();
    const sessionId = nextSessionId();
    await log.createSession(sessionId, { atMs: T0 });
    await log.saveMessage(sessionId, {
      atMs: T0 + 1,
      role: "user",
      content: [
        { type: "text", text: "看图 \u{1F600}" },
        { type: "image", mediaType: "image/png", url: "data:image/png;base64,iVBORw0KGgo=" },
      ],
    });
    await log.saveMessage(sessionId, {
      atMs: T0 + 2,
      role: "assistant",
      content: [{ type: "tool_call", callId: "c1", name: "shell", argumentsJson: '{"command": "date"}' }],
    });
    await log.saveMessage(sessionId, {
      atMs: T0 + 3,
      role: "tool",
      content: [{ type: "tool_result", callId: "c1", text: "Mon Oct 12", isError: true }],
    });
    const target = projection();
    await applyAll(target, log.events(sessionId));
    const view = await loadSessionView(sessionId);
    expect(view.messages.map((message) => message.content)).toEqual([
      [
        { type: "text", text: "看图 \u{1F600}" },
        { type: "image", mediaType: "image/png", url: "data:image/png;base64,iVBORw0KGgo=" },
      ],
      [{ type: "tool_call", callId: "c1", name: "shell", argumentsJson: '{"command": "date"}' }],
      [{ type: "tool_result", callId: "c1", text: "Mon Oct 12", isError: true }],
    ]);
  });

  it("maps the embed kind and replaces the inherited summary with the compaction summary", async () => {
    const log = new FakeSessionEvents();
    const sessionId = nextSessionId();
    await log.createSession(sessionId, { atMs: T0, kind: SessionKind.SESSION_KIND_EMBED, inheritedSummary: "旧摘要" });
    const message = await log.saveMessage(sessionId, { atMs: T0 + 1, role: "user", content: "嗨" });
    await log.commitCompaction(sessionId, {
      atMs: T0 + 2,
      generation: 1,
      boundaryMessageId: messageIdOf(message),
      summary: "新摘要",
    });
    const target = projection();
    await applyAll(target, log.events(sessionId));
    expect(await loadSessionView(sessionId)).toMatchObject({
      kind: "embed",
      summary: "新摘要",
      generation: 1,
      boundaryMessageId: messageIdOf(message),
    });
  });

  it("drops a deleted session's state and answers NotFound; an ended side task is refused", async () => {
    const log = new FakeSessionEvents();
    const deletedId = nextSessionId();
    await writeConversation(log, deletedId);
    await log.deleteSession(deletedId, T0 + 9_000);
    const sideId = nextSessionId();
    await log.createSession(sideId, { atMs: T0, kind: SessionKind.SESSION_KIND_SIDE });
    await log.saveMessage(sideId, { atMs: T0 + 1, role: "user", content: "边路" });
    await log.promoteSideTask(sideId, T0 + 2);
    const target = projection();
    await applyAll(target, [...log.events(deletedId), ...log.events(sideId)]);

    const deleted = await loadSessionView(deletedId).catch((error: unknown) => error);
    expect(deleted).toBeInstanceOf(NotFoundError);
    expect((deleted as NotFoundError).reason).toBe("session_deleted");
    const ended = await loadSessionView(sideId).catch((error: unknown) => error);
    expect(ended).toBeInstanceOf(FailedPreconditionError);
    expect((ended as FailedPreconditionError).reason).toBe("session_ended");
    expect(await store.db("pa_message").whereIn("session_id", [deletedId, sideId]).count({ n: "*" })).toEqual([
      { n: 0 },
    ]);
    const unknown = await loadSessionView("never-created").catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect((unknown as NotFoundError).reason).toBe("session_not_found");
  });

  it("rejects events that can never be applied and leaves the position where it was", async () => {
    const log = new FakeSessionEvents();
    const sessionId = nextSessionId();
    const created = await log.createSession(sessionId, { atMs: T0 });
    const target = projection();
    await target.applySessionEvent(created);
    const unspecifiedRole: SessionEvent = {
      ...created,
      eventId: "bad-1",
      seq: 2,
      type: "MessageSaved",
      payload: {
        $case: "messageSaved",
        value: {
          messageId: "x",
          role: Role.ROLE_UNSPECIFIED,
          content: [{ part: { $case: "text", value: { text: "?" } } }],
          thinkingChars: 0,
          localDate: "2026-10-12",
        },
      },
    };
    const noPayload: SessionEvent = { ...created, eventId: "bad-2", seq: 2, type: "MessageSaved", payload: undefined };
    const orphan: SessionEvent = {
      ...unspecifiedRole,
      sessionId: "never-created",
      seq: 1,
      payload: {
        $case: "messageSaved",
        value: { messageId: "y", role: Role.ROLE_USER, content: [], thinkingChars: 0, localDate: "2026-10-12" },
      },
    };
    for (const event of [unspecifiedRole, noPayload, orphan]) {
      await expect(target.applySessionEvent(event)).rejects.toBeInstanceOf(ValidationError);
    }
    expect(await target.projectionSeq(sessionId)).toBe(1);
    expect(await target.projectionSeq("never-created")).toBe(0);
  });
});
