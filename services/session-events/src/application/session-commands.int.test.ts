import { randomUUID } from "node:crypto";
import { LOCAL_HARNESS } from "@prefix-guard/access";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase, createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import {
  AlreadyExistsError,
  ConflictError,
  FailedPreconditionError,
  NotFoundError,
  ResourceExhaustedError,
  ValidationError,
} from "@prefix-guard/errors";
import { decodeSessionEvent, newEventId, openFields } from "@prefix-guard/events";
import { sessionEventsMigrations } from "@prefix-guard/migrations/session-events";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { SealedContent } from "@prefix-guard/proto/events/v1/session_events";
import {
  CommitCompactionRequest,
  CreateSessionRequest,
  DeleteMessageRequest,
  DeleteSessionRequest,
  GetDataKeysRequest,
  GetSessionRequest,
  ListMessagesRequest,
  PromoteSideTaskRequest,
  ReadEventsRequest,
  type SaveMessageRequest,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { saveMessageRequest, text } from "../../test/messages";
import { SessionStore } from "../adapters/mysql/session-store";
import { CHARACTER_QUOTA } from "../domain/limits";
import { SCRUB_MARKER } from "../domain/summary-scrub";
import { SessionCommands, type SessionCommandsDeps } from "./session-commands";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
// 2026-10-12T16:30:00Z: the 13th in Shanghai, the 12th in New York.
const START_MS = Date.UTC(2026, 9, 12, 16, 30);

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

function suite(name: string, open: () => Promise<{ db: Database; close: () => Promise<void> }>) {
  describe(name, () => {
    let db: Database;
    let close: () => Promise<void>;
    const clock = START_MS;
    const deps = (overrides: Partial<SessionCommandsDeps> = {}): SessionCommandsDeps => ({
      store: new SessionStore(db),
      now: () => clock,
      newEventId: () => newEventId(clock),
      newId: () => randomUUID(),
      traceparent: () => TRACEPARENT,
      ...overrides,
    });
    let commands: SessionCommands;

    beforeAll(async () => {
      ({ db, close } = await open());
      expect(await runMigrations(db, sessionEventsMigrations)).toEqual([
        "0001_session_event",
        "0002_session_projections",
        "0003_session_locale",
        "0004_session_scope",
        "0005_session_data_key",
        "0006_session_last_event_at",
        "0007_session_event_lease_slot",
      ]);
      expect(await runMigrations(db, sessionEventsMigrations)).toEqual([]);
      commands = new SessionCommands(deps());
    });
    afterAll(async () => close());

    const createSession = async (fields: Partial<CreateSessionRequest> = {}) => {
      const response = await commands.createSession(
        CreateSessionRequest.fromPartial({ owner: "u1", workspace: "/w", ...fields }),
        LOCAL_HARNESS,
      );
      if (response.session === undefined) throw new Error("no session in response");
      return response.session.sessionId;
    };
    const say = (sessionId: string, content: string, extra: Partial<SaveMessageRequest> = {}) =>
      commands.saveMessage(saveMessageRequest(sessionId, content, extra), LOCAL_HARNESS);
    const count = async (table: string, sessionId: string) => {
      const [row] = await db(table).where({ session_id: sessionId }).count({ n: "*" });
      return Number(row?.n);
    };
    const events = async (sessionId: string, afterSeq = 0, limit = 0) =>
      commands.readEvents(ReadEventsRequest.fromPartial({ sessionId, afterSeq, limit }), LOCAL_HARNESS);
    /** An event's sealed content, opened with the key GetDataKeys gives for its session. */
    const unseal = async (event: { sessionId: string; seq: number }, sealed: SealedContent | undefined) => {
      if (sealed === undefined) throw new Error(`event ${event.seq} carries no sealed content`);
      const { keys } = await commands.getDataKeys(GetDataKeysRequest.fromPartial({ sessionIds: [event.sessionId] }));
      const key = keys[0];
      if (key === undefined || key.erased) throw new Error("no data key");
      return openFields({ keyId: key.keyId, key: key.key }, event.sessionId, event.seq, sealed);
    };

    it("creates a session with defaults, appends SessionCreated at seq 1 into the outbox", async () => {
      const sessionId = await createSession();
      const session = await commands.getSession(GetSessionRequest.fromPartial({ sessionId }), LOCAL_HARNESS);
      expect(session).toMatchObject({
        owner: "u1",
        timezone: "Asia/Shanghai",
        kind: SessionKind.SESSION_KIND_MAIN,
        lastSeq: 1,
        deleted: false,
        ended: false,
      });
      const rows = await db("session_event")
        .where({ session_id: sessionId })
        .select("seq", "type", "traceparent", "published_at_ms", "payload");
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ type: "SessionCreated", traceparent: TRACEPARENT, published_at_ms: null });
      expect(Number(rows[0].seq)).toBe(1);
      const event = decodeSessionEvent(rows[0].payload);
      expect(event.payload.$case).toBe("sessionCreated");
      expect(event.occurredAtMs).toBe(START_MS);
    });

    it("rejects a second session with a caller-chosen id that exists", async () => {
      const sessionId = `fixed-${randomUUID()}`;
      await createSession({ sessionId });
      expect(await rejection(createSession({ sessionId, owner: "u2" }))).toBeInstanceOf(AlreadyExistsError);
      const racing = await Promise.allSettled([
        createSession({ sessionId: `${sessionId}-b` }),
        createSession({ sessionId: `${sessionId}-b` }),
      ]);
      expect(racing.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      expect(racing.find((r) => r.status === "rejected")?.reason).toBeInstanceOf(AlreadyExistsError);
      expect(await count("session_event", `${sessionId}-b`)).toBe(1);
    });

    it("treats ids that differ only in case as different sessions", async () => {
      const suffix = randomUUID().slice(0, 8);
      await createSession({ sessionId: `Case-${suffix}` });
      await createSession({ sessionId: `case-${suffix}`, owner: "u2" });
      expect(
        (await commands.getSession(GetSessionRequest.fromPartial({ sessionId: `Case-${suffix}` }), LOCAL_HARNESS))
          .owner,
      ).toBe("u1");
      expect(
        (await commands.getSession(GetSessionRequest.fromPartial({ sessionId: `case-${suffix}` }), LOCAL_HARNESS))
          .owner,
      ).toBe("u2");
    });

    it("keeps seq gap-free under 20 concurrent saveMessage calls", async () => {
      const sessionId = await createSession();
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => say(sessionId, `message ${i}`)));
      expect(results.map((r) => r.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
      const page = await events(sessionId);
      expect(page.events.map((e) => e.seq)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
      expect(page.lastSeq).toBe(21);
      const listed = await commands.listMessages(ListMessagesRequest.fromPartial({ sessionId }), LOCAL_HARNESS);
      expect(listed.messages).toHaveLength(20);
      expect(
        (await commands.getSession(GetSessionRequest.fromPartial({ sessionId }), LOCAL_HARNESS)).contentChars,
      ).toBe(results.reduce((sum, _r, i) => sum + `message ${i}`.length, 0));
    });

    describe("messages saved at the same time (group commit)", () => {
      /** Commands over a store that records the size of every group it appends. */
      function grouped() {
        const store = new SessionStore(db);
        const groupSizes: number[] = [];
        const appendMessages = store.appendMessages.bind(store);
        store.appendMessages = (group, keys, nowMs) => {
          groupSizes.push(group.length);
          return appendMessages(group, keys, nowMs);
        };
        return { commands: new SessionCommands(deps({ store })), groupSizes };
      }

      it("appends them in shared transactions, and refuses only the message its own decision refuses", async () => {
        const { commands: grouping, groupSizes } = grouped();
        const sessions = [await createSession(), await createSession(), await createSession()];
        const full = await createSession();
        await say(full, "字".repeat(CHARACTER_QUOTA));
        const burst = await Promise.allSettled([
          ...Array.from({ length: 30 }, (_, i) =>
            grouping.saveMessage(saveMessageRequest(sessions[i % 3] ?? "", `burst ${i}`), LOCAL_HARNESS),
          ),
          grouping.saveMessage(saveMessageRequest(full, "one character too many"), LOCAL_HARNESS),
          grouping.saveMessage(saveMessageRequest(sessions[0] ?? "", "stale", { expectedSeq: 1 }), LOCAL_HARNESS),
        ]);
        expect(burst.slice(0, 30).every((outcome) => outcome.status === "fulfilled")).toBe(true);
        expect((burst[30] as PromiseRejectedResult).reason).toBeInstanceOf(ResourceExhaustedError);
        expect((burst[31] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
        expect(groupSizes.length).toBeLessThan(32);
        expect(Math.max(...groupSizes)).toBeGreaterThan(1);
        for (const [index, sessionId] of sessions.entries()) {
          const page = await events(sessionId);
          expect(page.events.map((e) => e.seq)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
          const session = await commands.getSession(GetSessionRequest.fromPartial({ sessionId }), LOCAL_HARNESS);
          expect(session.lastSeq).toBe(11);
          const texts = Array.from({ length: 30 }, (_, i) => i)
            .filter((i) => i % 3 === index)
            .map((i) => `burst ${i}`);
          expect(session.contentChars).toBe(texts.reduce((sum, t) => sum + t.length, 0));
          // Within a session, messages keep the order they were saved in.
          const listed = await commands.listMessages(ListMessagesRequest.fromPartial({ sessionId }), LOCAL_HARNESS);
          expect(listed.messages.map((m) => m.content[0]?.part)).toEqual(
            texts.map((t) => ({ $case: "text", value: { text: t } })),
          );
        }
        expect(await count("message", full)).toBe(1);
      });

      it("writes each message again alone when the database refuses the group, so only the blocked one fails", async () => {
        const { commands: grouping } = grouped();
        const free = [await createSession(), await createSession()];
        const blocked = await createSession();
        await db("session_event").insert({
          event_id: randomUUID(),
          session_id: blocked,
          seq: 2,
          type: "MessageSaved",
          payload: Buffer.from([1]),
          occurred_at_ms: 1,
        });
        // The first save goes alone; the others queue behind it and form one group with the blocked one.
        const outcomes = await Promise.allSettled([
          grouping.saveMessage(saveMessageRequest(free[0] ?? "", "first"), LOCAL_HARNESS),
          grouping.saveMessage(saveMessageRequest(free[0] ?? "", "second"), LOCAL_HARNESS),
          grouping.saveMessage(saveMessageRequest(blocked, "blocked"), LOCAL_HARNESS),
          grouping.saveMessage(saveMessageRequest(free[1] ?? "", "third"), LOCAL_HARNESS),
        ]);
        expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
        expect((outcomes[2] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
        expect(await count("message", blocked)).toBe(0);
        expect(await count("message", free[0] ?? "")).toBe(2);
        expect(await count("message", free[1] ?? "")).toBe(1);
      });
    });

    it("stores messages with the session's local date and returns them without thinking text", async () => {
      const sessionId = await createSession({ timezone: "America/New_York" });
      const saved = await say(sessionId, "hello", { thinkingText: "secret reasoning" });
      expect(saved).toMatchObject({ seq: 2, createdAtMs: START_MS, localDate: "2026-10-12" });
      const shanghai = await createSession();
      expect((await say(shanghai, "你好")).localDate).toBe("2026-10-13");

      const [message] = (await commands.listMessages(ListMessagesRequest.fromPartial({ sessionId }), LOCAL_HARNESS))
        .messages;
      expect(message).toMatchObject({
        messageId: saved.messageId,
        seq: 2,
        role: Role.ROLE_USER,
        thinkingChars: 16,
        localDate: "2026-10-12",
        deleted: false,
      });
      expect(message?.content).toEqual([text("hello")]);
      expect(JSON.stringify(message)).not.toContain("secret reasoning");

      const [, savedEvent] = (await events(sessionId)).events;
      expect(savedEvent?.type).toBe("MessageSaved");
      if (savedEvent?.payload?.$case !== "messageSaved") throw new Error("expected MessageSaved");
      expect(savedEvent.payload.value).toMatchObject({
        messageId: saved.messageId,
        role: Role.ROLE_USER,
        thinkingChars: 16,
        localDate: "2026-10-12",
      });
      // Schema 2: the content travels sealed with the session's key, the plaintext field left empty.
      expect(savedEvent.schemaVersion).toBe(2);
      expect(savedEvent.payload.value.content).toEqual([]);
      const opened = await unseal(savedEvent, savedEvent.payload.value.sealed);
      expect(opened.content[0]?.part).toEqual({
        $case: "text",
        value: expect.objectContaining({ text: "hello" }),
      });
    });

    it("lets the expected_seq loser fail with ConflictError and append nothing", async () => {
      const sessionId = await createSession();
      await say(sessionId, "first", { expectedSeq: 1 });
      const before = await count("session_event", sessionId);
      const error = await rejection(say(sessionId, "stale", { expectedSeq: 1 }));
      expect(error).toBeInstanceOf(ConflictError);
      expect((error as ConflictError).reason).toBe("seq_mismatch");
      expect(await count("session_event", sessionId)).toBe(before);
      expect(await count("message", sessionId)).toBe(1);
      const racers = await Promise.allSettled([
        say(sessionId, "a", { expectedSeq: 2 }),
        say(sessionId, "b", { expectedSeq: 2 }),
      ]);
      expect(racers.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      expect(await count("session_event", sessionId)).toBe(before + 1);
    });

    it("maps a seq already taken in the event store to ConflictError, storing nothing", async () => {
      const sessionId = await createSession();
      // A foreign row at the next seq: the unique (session_id, seq) index must stop the append.
      await db("session_event").insert({
        event_id: randomUUID(),
        session_id: sessionId,
        seq: 2,
        type: "MessageSaved",
        payload: Buffer.from([1]),
        occurred_at_ms: 1,
      });
      const error = await rejection(say(sessionId, "blocked"));
      expect(error).toBeInstanceOf(ConflictError);
      expect(await count("message", sessionId)).toBe(0);
      expect((await commands.getSession(GetSessionRequest.fromPartial({ sessionId }), LOCAL_HARNESS)).lastSeq).toBe(1);
    });

    it("lets exactly one of two racing compactions win; the loser gets generation_mismatch and no event", async () => {
      const sessionId = await createSession();
      const m1 = await say(sessionId, "one");
      const m2 = await say(sessionId, "two");
      const compact = (boundaryMessageId: string, summary: string) =>
        commands.commitCompaction(
          CommitCompactionRequest.fromPartial({ sessionId, expectedGeneration: 0, boundaryMessageId, summary }),
          LOCAL_HARNESS,
        );
      const outcomes = await Promise.allSettled([compact(m1.messageId, "摘要一"), compact(m2.messageId, "摘要二")]);
      const won = outcomes.filter((o) => o.status === "fulfilled");
      const lost = outcomes.filter((o) => o.status === "rejected");
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(lost[0]?.reason).toBeInstanceOf(ConflictError);
      expect((lost[0] as PromiseRejectedResult).reason.reason).toBe("generation_mismatch");
      const compactions = (await events(sessionId)).events.filter((e) => e.type === "CompactionCommitted");
      expect(compactions).toHaveLength(1);
      expect(await count("compaction", sessionId)).toBe(1);
      const session = await commands.getSession(GetSessionRequest.fromPartial({ sessionId }), LOCAL_HARNESS);
      expect(session.compactionGeneration).toBe(1);
      expect(await rejection(compact(m2.messageId, "again"))).toBeInstanceOf(ConflictError);
    });

    it("scrubs the compaction summary with the session's personal terms and returns the stored text", async () => {
      const sessionId = await createSession();
      await say(sessionId, "我叫林晓梅，出生于青岛，邮箱 lxm@example.com");
      await commands.saveMessage(
        saveMessageRequest(sessionId, "好的，我叫助手", { role: Role.ROLE_ASSISTANT }),
        LOCAL_HARNESS,
      );
      const boundary = await say(sessionId, "想问工作");
      const response = await commands.commitCompaction(
        CommitCompactionRequest.fromPartial({
          sessionId,
          expectedGeneration: 0,
          boundaryMessageId: boundary.messageId,
          summary: "林晓梅（lxm@example.com，1991-03-08 生）来自青岛，关心工作；助手建议先梳理目标。",
        }),
        LOCAL_HARNESS,
      );
      expect(response).toMatchObject({ seq: 5, generation: 1 });
      for (const secret of ["林晓梅", "lxm@example.com", "1991-03-08", "青岛"])
        expect(response.summary).not.toContain(secret);
      expect(response.summary).toContain("关心工作");
      expect(response.summary).toContain("助手建议");
      expect(response.summary).toContain(SCRUB_MARKER);
      const session = await commands.getSession(GetSessionRequest.fromPartial({ sessionId }), LOCAL_HARNESS);
      expect(session).toMatchObject({
        summary: response.summary,
        compactionGeneration: 1,
        compactionBoundaryMessageId: boundary.messageId,
      });
      const last = (await events(sessionId)).events.at(-1);
      if (last?.payload?.$case !== "compactionCommitted") throw new Error("expected CompactionCommitted");
      expect(last.payload.value).toMatchObject({
        generation: 1,
        boundaryMessageId: boundary.messageId,
        summary: "",
      });
      expect((await unseal(last, last.payload.value.sealed)).summary).toBe(response.summary);
    });

    it("rejects a boundary from another session or a deleted one", async () => {
      const sessionId = await createSession();
      const other = await createSession();
      const foreign = await say(other, "elsewhere");
      const own = await say(sessionId, "mine");
      await commands.deleteMessage(
        DeleteMessageRequest.fromPartial({ sessionId, messageId: own.messageId }),
        LOCAL_HARNESS,
      );
      const compact = (boundaryMessageId: string) =>
        commands.commitCompaction(
          CommitCompactionRequest.fromPartial({ sessionId, expectedGeneration: 0, boundaryMessageId, summary: "s" }),
          LOCAL_HARNESS,
        );
      expect(await rejection(compact(foreign.messageId))).toBeInstanceOf(NotFoundError);
      expect(await rejection(compact(own.messageId))).toBeInstanceOf(FailedPreconditionError);
      expect(await count("compaction", sessionId)).toBe(0);
    });

    it("rejects a message over the character quota cleanly, with nothing stored", async () => {
      const sessionId = await createSession();
      await say(sessionId, "字".repeat(150_000));
      const rowsBefore = [await count("session_event", sessionId), await count("message", sessionId)];
      const sessionBefore = await commands.getSession(GetSessionRequest.fromPartial({ sessionId }), LOCAL_HARNESS);
      const error = await rejection(say(sessionId, "字".repeat(CHARACTER_QUOTA - 150_000 + 1)));
      expect(error).toBeInstanceOf(ResourceExhaustedError);
      expect((error as ResourceExhaustedError).reason).toBe("session_full");
      expect([await count("session_event", sessionId), await count("message", sessionId)]).toEqual(rowsBefore);
      expect(await commands.getSession(GetSessionRequest.fromPartial({ sessionId }), LOCAL_HARNESS)).toEqual(
        sessionBefore,
      );
      // Exactly filling the quota is still allowed.
      expect((await say(sessionId, "字".repeat(CHARACTER_QUOTA - 150_000))).seq).toBe(3);
    });

    it("does not count thinking text toward the quota", async () => {
      const sessionId = await createSession();
      await say(sessionId, "a".repeat(100_000), { role: Role.ROLE_ASSISTANT, thinkingText: "想".repeat(150_000) });
      const second = await say(sessionId, "b".repeat(100_000));
      expect(second.seq).toBe(3);
      const session = await commands.getSession(GetSessionRequest.fromPartial({ sessionId }), LOCAL_HARNESS);
      expect(session.contentChars).toBe(CHARACTER_QUOTA);
      expect(session.serializedBytes).toBeGreaterThan(650_000);
      expect(await rejection(say(sessionId, "c"))).toBeInstanceOf(ResourceExhaustedError);
    });

    it("enforces the physical cap on the serialized session, thinking text included", async () => {
      const small = new SessionCommands(deps({ limits: { maxSerializedSessionBytes: 50_000 } }));
      const response = await small.createSession(CreateSessionRequest.fromPartial({ owner: "u1" }), LOCAL_HARNESS);
      const sessionId = response.session?.sessionId ?? "";
      await small.saveMessage(
        saveMessageRequest(sessionId, "ok", { role: Role.ROLE_ASSISTANT, thinkingText: "t".repeat(30_000) }),
        LOCAL_HARNESS,
      );
      const before = await count("message", sessionId);
      const error = await rejection(
        small.saveMessage(
          saveMessageRequest(sessionId, "ok", { role: Role.ROLE_ASSISTANT, thinkingText: "t".repeat(30_000) }),
          LOCAL_HARNESS,
        ),
      );
      expect(error).toBeInstanceOf(ResourceExhaustedError);
      expect((error as ResourceExhaustedError).reason).toBe("session_full");
      expect((error as ResourceExhaustedError).context.limit).toBe("serialized_bytes");
      expect(await count("message", sessionId)).toBe(before);
    });

    it("gives deleted messages' characters back to the quota and hides them unless asked", async () => {
      const sessionId = await createSession();
      const big = await say(sessionId, "x".repeat(150_000));
      expect(await rejection(say(sessionId, "y".repeat(60_000)))).toBeInstanceOf(ResourceExhaustedError);
      const deleted = await commands.deleteMessage(
        DeleteMessageRequest.fromPartial({ sessionId, messageId: big.messageId, expectedSeq: 2 }),
        LOCAL_HARNESS,
      );
      expect(deleted.seq).toBe(3);
      expect((await say(sessionId, "y".repeat(60_000))).seq).toBe(4);
      expect(
        (await commands.listMessages(ListMessagesRequest.fromPartial({ sessionId }), LOCAL_HARNESS)).messages.map(
          (m) => m.seq,
        ),
      ).toEqual([4]);
      const all = await commands.listMessages(
        ListMessagesRequest.fromPartial({ sessionId, includeDeleted: true }),
        LOCAL_HARNESS,
      );
      expect(all.messages.map((m) => [m.seq, m.deleted])).toEqual([
        [2, true],
        [4, false],
      ]);
      expect(
        await rejection(
          commands.deleteMessage(
            DeleteMessageRequest.fromPartial({ sessionId, messageId: big.messageId }),
            LOCAL_HARNESS,
          ),
        ),
      ).toBeInstanceOf(NotFoundError);
    });

    it("copies the source summary silently for the same owner only", async () => {
      const source = await createSession({ owner: "alice" });
      const boundary = await say(source, "聊了很多");
      const { summary } = await commands.commitCompaction(
        CommitCompactionRequest.fromPartial({
          sessionId: source,
          expectedGeneration: 0,
          boundaryMessageId: boundary.messageId,
          summary: "用户关心跳槽时机。",
        }),
        LOCAL_HARNESS,
      );

      const continued = await createSession({ owner: "alice", continuedFromSessionId: source });
      const session = await commands.getSession(GetSessionRequest.fromPartial({ sessionId: continued }), LOCAL_HARNESS);
      expect(session).toMatchObject({ summary, inheritedSummaryFrom: source, compactionGeneration: 0, lastSeq: 1 });
      const [created] = (await events(continued)).events;
      if (created?.payload?.$case !== "sessionCreated") throw new Error("expected SessionCreated");
      expect(created.payload.value).toMatchObject({ inheritedSummaryFrom: source, inheritedSummary: "" });
      expect((await unseal(created, created.payload.value.sealed)).inheritedSummary).toBe(summary);

      for (const [owner, from] of [
        ["mallory", source],
        ["alice", "no-such-session"],
      ] as const) {
        const normal = await createSession({ owner, continuedFromSessionId: from });
        const plain = await commands.getSession(GetSessionRequest.fromPartial({ sessionId: normal }), LOCAL_HARNESS);
        expect(plain).toMatchObject({ summary: "", inheritedSummaryFrom: "", lastSeq: 1 });
        const [plainCreated] = (await events(normal)).events;
        if (plainCreated?.payload?.$case !== "sessionCreated") throw new Error("expected SessionCreated");
        expect(plainCreated.payload.value).toMatchObject({ inheritedSummaryFrom: "", inheritedSummary: "" });
        // Nothing to seal: no seal, so a consumer needs no key for it.
        expect(plainCreated.payload.value.sealed).toBeUndefined();
      }
    });

    it("refuses every write to a deleted session with NotFoundError but keeps its events readable", async () => {
      const sessionId = await createSession();
      const kept = await say(sessionId, "before delete");
      expect((await commands.deleteSession(DeleteSessionRequest.fromPartial({ sessionId }), LOCAL_HARNESS)).seq).toBe(
        3,
      );
      const eventsBefore = await count("session_event", sessionId);
      const writes: (() => Promise<unknown>)[] = [
        () => say(sessionId, "after"),
        () =>
          commands.deleteMessage(
            DeleteMessageRequest.fromPartial({ sessionId, messageId: kept.messageId }),
            LOCAL_HARNESS,
          ),
        () =>
          commands.commitCompaction(
            CommitCompactionRequest.fromPartial({ sessionId, boundaryMessageId: kept.messageId, summary: "s" }),
            LOCAL_HARNESS,
          ),
        () => commands.deleteSession(DeleteSessionRequest.fromPartial({ sessionId }), LOCAL_HARNESS),
        () => commands.promoteSideTask(PromoteSideTaskRequest.fromPartial({ sessionId }), LOCAL_HARNESS),
        () => commands.listMessages(ListMessagesRequest.fromPartial({ sessionId }), LOCAL_HARNESS),
      ];
      for (const write of writes) expect(await rejection(write())).toBeInstanceOf(NotFoundError);
      expect(await count("session_event", sessionId)).toBe(eventsBefore);
      expect((await commands.getSession(GetSessionRequest.fromPartial({ sessionId }), LOCAL_HARNESS)).deleted).toBe(
        true,
      );
      expect((await events(sessionId)).events.map((e) => e.type)).toEqual([
        "SessionCreated",
        "MessageSaved",
        "SessionDeleted",
      ]);
      expect(await rejection(say("never-created", "hi"))).toBeInstanceOf(NotFoundError);
      expect(
        await rejection(
          commands.getSession(GetSessionRequest.fromPartial({ sessionId: "never-created" }), LOCAL_HARNESS),
        ),
      ).toBeInstanceOf(NotFoundError);
    });

    it("ends a promoted side task: it takes no more writes and is promoted once", async () => {
      const parent = await createSession();
      const side = await createSession({ kind: SessionKind.SESSION_KIND_SIDE, parentSessionId: parent });
      await say(side, "side work");
      expect(
        (await commands.promoteSideTask(PromoteSideTaskRequest.fromPartial({ sessionId: side }), LOCAL_HARNESS)).seq,
      ).toBe(3);
      const promoted = (await events(side)).events.at(-1);
      if (promoted?.payload?.$case !== "sideTaskPromoted") throw new Error("expected SideTaskPromoted");
      expect(promoted.payload.value.parentSessionId).toBe(parent);
      expect((await commands.getSession(GetSessionRequest.fromPartial({ sessionId: side }), LOCAL_HARNESS)).ended).toBe(
        true,
      );
      expect(await rejection(say(side, "late"))).toBeInstanceOf(FailedPreconditionError);
      expect(
        await rejection(
          commands.promoteSideTask(PromoteSideTaskRequest.fromPartial({ sessionId: side }), LOCAL_HARNESS),
        ),
      ).toBeInstanceOf(FailedPreconditionError);
      expect(
        await rejection(
          commands.promoteSideTask(PromoteSideTaskRequest.fromPartial({ sessionId: parent }), LOCAL_HARNESS),
        ),
      ).toBeInstanceOf(FailedPreconditionError);
      expect(
        await rejection(createSession({ kind: SessionKind.SESSION_KIND_SIDE, parentSessionId: parent, owner: "u2" })),
      ).toBeInstanceOf(NotFoundError);
    });

    it("pages through events with after_seq and limit", async () => {
      const sessionId = await createSession();
      for (let i = 0; i < 6; i++) await say(sessionId, `m${i}`);
      const first = await events(sessionId, 0, 3);
      expect(first.events.map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(first.lastSeq).toBe(7);
      const second = await events(sessionId, 3, 3);
      expect(second.events.map((e) => [e.seq, e.type])).toEqual([
        [4, "MessageSaved"],
        [5, "MessageSaved"],
        [6, "MessageSaved"],
      ]);
      expect((await events(sessionId, 6, 3)).events.map((e) => e.seq)).toEqual([7]);
      expect((await events(sessionId, 7, 3)).events).toEqual([]);
      for (const event of first.events) expect(event.sessionId).toBe(sessionId);
      expect(new Set(first.events.map((e) => e.eventId)).size).toBe(3);
      expect(await rejection(events(sessionId, 0, 1001))).toBeInstanceOf(ValidationError);
    });
  });
}

let mariadb: TestDatabase;
suite("session commands on real MariaDB", async () => {
  mariadb = await createTestDatabase("session_events");
  // As the service opens it: hot writes send several statements per round trip.
  const db = createDatabase(mariadb.url, { multipleStatements: true });
  return {
    db,
    close: async () => {
      await db.destroy();
      await mariadb.drop();
    },
  };
});
suite("session commands on SQLite", async () => {
  const db = createMemoryDatabase();
  return { db, close: () => db.destroy() };
});
