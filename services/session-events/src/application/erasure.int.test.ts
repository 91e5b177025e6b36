// docs/decisions/crypto-shredding.md in session-events, on SQLite and on real MariaDB: content is
// sealed with the session's data key on write; DeleteSession (and the retention sweep) erase every
// byte of a session's content from every table; live sessions stay readable; sessions from before
// keys existed get one lazily.

import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { LOCAL_HARNESS } from "@prefix-guard/access";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase, createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { NotFoundError } from "@prefix-guard/errors";
import {
  type DataKey,
  decodeSessionEvent,
  encodeSessionEvent,
  newDataKey,
  newEventId,
  openFields,
} from "@prefix-guard/events";
import { createLogger } from "@prefix-guard/logging";
import { sessionEventsMigrations } from "@prefix-guard/migrations/session-events";
import { type ContentPart, Role } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import {
  CommitCompactionRequest,
  CreateSessionRequest,
  DeleteSessionRequest,
  GetDataKeysRequest,
  GetSessionRequest,
  ListMessagesRequest,
  ReadEventsRequest,
  SaveMessageRequest,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { text } from "../../test/messages";
import { SessionStore, SessionTransaction } from "../adapters/mysql/session-store";
import { ERASE_EVENT_BATCH } from "../domain/erasure";
import { RetentionSweep } from "./retention-sweep";
import { SessionCommands, type SessionCommandsDeps } from "./session-commands";

const START_MS = Date.UTC(2026, 9, 12, 16, 30);

function letters(count: number): string {
  return Array.from({ length: count }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join("");
}
const DAY_MS = 86_400_000;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

/** Every table of the database, every column of every row, as text (binary columns decoded as UTF-8 and Latin-1). */
async function tableTexts(db: Database): Promise<{ where: string; text: string }[]> {
  const mysql = db.client.config.client === "mysql2";
  const tables: string[] = mysql
    ? (
        (
          await db.raw("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()")
        )[0] as {
          name: string;
        }[]
      ).map((row) => row.name)
    : ((await db.raw("SELECT name FROM sqlite_master WHERE type = 'table'")) as { name: string }[]).map((r) => r.name);
  expect(tables).toEqual(
    expect.arrayContaining(["session", "session_event", "message", "compaction", "session_data_key"]),
  );
  const out: { where: string; text: string }[] = [];
  for (const table of tables) {
    const rows = (await db(table).select("*")) as Record<string, unknown>[];
    rows.forEach((row, index) => {
      for (const [column, value] of Object.entries(row)) {
        const where = `${table}[${index}].${column}`;
        if (value instanceof Uint8Array) {
          const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
          out.push({ where, text: bytes.toString("utf8") }, { where, text: bytes.toString("latin1") });
        } else if (value !== null && value !== undefined) out.push({ where, text: String(value) });
      }
    });
  }
  return out;
}

/** Where in the database any of `canaries` still is. */
async function canaryHits(db: Database, canaries: readonly string[]): Promise<string[]> {
  const hits = new Set<string>();
  for (const { where, text: value } of await tableTexts(db))
    for (const canary of canaries) if (value.includes(canary)) hits.add(`${canary} in ${where}`);
  return [...hits];
}

function suite(name: string, open: () => Promise<{ db: Database; close: () => Promise<void> }>) {
  describe(name, () => {
    let db: Database;
    let close: () => Promise<void>;
    let clock = START_MS;
    // Letters only: a run of digits in a summary could be scrubbed as a phone number.
    const run = letters(8);
    const deps = (overrides: Partial<SessionCommandsDeps> = {}): SessionCommandsDeps => ({
      store: new SessionStore(db),
      now: () => clock,
      newEventId: () => newEventId(clock),
      newId: () => randomUUID(),
      traceparent: () => undefined,
      ...overrides,
    });
    let commands: SessionCommands;

    beforeAll(async () => {
      ({ db, close } = await open());
      await runMigrations(db, sessionEventsMigrations);
      commands = new SessionCommands(deps());
    });
    afterAll(async () => close());

    const createSession = async (fields: Partial<CreateSessionRequest> = {}, using = commands) => {
      const response = await using.createSession(
        CreateSessionRequest.fromPartial({ owner: "u1", workspace: "/w", ...fields }),
        LOCAL_HARNESS,
      );
      if (response.session === undefined) throw new Error("no session in response");
      return response.session.sessionId;
    };
    const save = (sessionId: string, request: Partial<SaveMessageRequest>, using = commands) =>
      using.saveMessage(SaveMessageRequest.fromPartial({ sessionId, role: Role.ROLE_USER, ...request }), LOCAL_HARNESS);
    const compact = (sessionId: string, boundaryMessageId: string, summary: string, personalTerms: string[] = []) =>
      commands.commitCompaction(
        CommitCompactionRequest.fromPartial({ sessionId, boundaryMessageId, summary, personalTerms }),
        LOCAL_HARNESS,
      );
    const readEvents = async (sessionId: string) =>
      (await commands.readEvents(ReadEventsRequest.fromPartial({ sessionId, limit: 1000 }), LOCAL_HARNESS)).events;
    const keysOf = async (...sessionIds: string[]) =>
      (await commands.getDataKeys(GetDataKeysRequest.fromPartial({ sessionIds }))).keys;
    const keyOf = async (sessionId: string): Promise<DataKey> => {
      const [key] = await keysOf(sessionId);
      if (key === undefined || key.erased || key.key.length === 0) throw new Error(`no key for ${sessionId}`);
      return { keyId: key.keyId, key: key.key };
    };
    /** The event's content, from its seal (schema 2) or its plaintext fields (schema 1). */
    const contentOf = (event: SessionEvent, key: DataKey | undefined) => {
      const payload = event.payload;
      const sealed =
        payload?.$case === "messageSaved" ||
        payload?.$case === "compactionCommitted" ||
        payload?.$case === "sessionCreated"
          ? payload.value.sealed
          : undefined;
      if (sealed === undefined || key === undefined) return undefined;
      return openFields(key, event.sessionId, event.seq, sealed);
    };

    /** A session with every kind of content, each a canary of its own; returns the canaries. */
    async function fullSession(label: string, fields: Partial<CreateSessionRequest> = {}) {
      const c = (field: string) => `CANARY-${run}-${label}-${field}`;
      const sessionId = await createSession({ personalTerms: [c("term")], ...fields });
      const first = await save(sessionId, {
        content: [
          text(c("text")),
          { part: { $case: "image", value: { mediaType: "image/png", url: `https://img.example/${c("url")}.png` } } },
          { part: { $case: "image", value: { mediaType: "image/png", url: `data:image/png;base64,${c("data")}` } } },
        ],
        thinkingText: c("thinking"),
      });
      await save(sessionId, {
        role: Role.ROLE_ASSISTANT,
        content: [
          {
            part: {
              $case: "toolCall",
              value: { callId: "call-1", name: "shell", argumentsJson: `{"cmd":"${c("args")}"}` },
            },
          },
        ],
      });
      await save(sessionId, {
        role: Role.ROLE_TOOL,
        content: [{ part: { $case: "toolResult", value: { callId: "call-1", text: c("result"), isError: false } } }],
      });
      await compact(sessionId, first.messageId, `Summary ${c("summary")}.`, [c("term2")]);
      const canaries = ["text", "url", "data", "thinking", "args", "result", "summary"].map(c);
      return { sessionId, canaries, personalTerms: [c("term"), c("term2")] };
    }

    it("seals every content field of the events it writes; the projections keep plaintext", async () => {
      const source = await fullSession("seal-src");
      const live = await fullSession("seal", { continuedFromSessionId: source.sessionId });
      // The event log holds no content in the clear, the projection tables do (ListMessages, GetSession).
      const hits = await canaryHits(db, live.canaries);
      expect(hits.filter((hit) => hit.includes("session_event"))).toEqual([]);
      expect(hits.some((hit) => hit.includes(".content_json"))).toBe(true);
      // Personal terms are used for scrubbing and never stored anywhere.
      expect(await canaryHits(db, [...live.personalTerms, ...source.personalTerms])).toEqual([]);

      const key = await keyOf(live.sessionId);
      const events = await readEvents(live.sessionId);
      expect(events.map((e) => e.type)).toEqual([
        "SessionCreated",
        "MessageSaved",
        "MessageSaved",
        "MessageSaved",
        "CompactionCommitted",
      ]);
      const opened = events.map((event) => contentOf(event, key));
      const openedText = JSON.stringify(opened);
      for (const canary of live.canaries.filter((c) => !c.endsWith("thinking"))) expect(openedText).toContain(canary);
      // Thinking text never travels in events, sealed or not.
      expect(openedText).not.toContain("thinking");
      // The inherited summary is the source's summary, sealed under the continuation's key.
      expect(opened[0]?.inheritedSummary).toContain(source.canaries.at(-1));
      for (const event of events) {
        expect(event.schemaVersion).toBe(2);
        const value = event.payload?.value as { content?: ContentPart[]; summary?: string; inheritedSummary?: string };
        expect(value.content ?? []).toEqual([]);
        expect(value.summary ?? "").toBe("");
        expect(value.inheritedSummary ?? "").toBe("");
      }
      // Another session's key does not open them.
      expect(() => contentOf(events[1] as SessionEvent, { ...key, key: newDataKey().key })).toThrow(/cannot be opened/);
    });

    it("DeleteSession erases the session's content from every table and destroys its key; others stay readable", async () => {
      const source = await fullSession("src");
      const erased = await fullSession("gone", { continuedFromSessionId: source.sessionId });
      const kept = await fullSession("kept");
      // Published or not, an event's row is rewritten.
      await db("session_event").where({ session_id: erased.sessionId }).andWhere("seq", "<=", 2).update({
        published_at_ms: 42,
      });
      const before = await db("session_event")
        .where({ session_id: erased.sessionId })
        .orderBy("seq")
        .select("id", "seq", "type", "published_at_ms", "event_id");

      const { seq } = await commands.deleteSession(
        DeleteSessionRequest.fromPartial({ sessionId: erased.sessionId }),
        LOCAL_HARNESS,
      );
      expect(seq).toBe(6);

      expect(await canaryHits(db, erased.canaries)).toEqual([]);
      // The copy of the source's summary it inherited is gone from its rows (the source keeps its own).
      const sourceSummary = source.canaries.at(-1) ?? "";
      const erasedRows = [
        ...(await db("session_event").where({ session_id: erased.sessionId }).select("payload")).map((r) =>
          Buffer.from(r.payload).toString("latin1"),
        ),
        ...(await db("session").where({ session_id: erased.sessionId }).select("summary")).map((r) => r.summary),
      ];
      expect(erasedRows.join("\n")).not.toContain(sourceSummary);
      expect(await canaryHits(db, [sourceSummary])).not.toEqual([]);

      // The key's bytes are gone; GetDataKeys says erased, in request order, beside a live and an unknown id.
      const keyRow = await db("session_data_key").where({ session_id: erased.sessionId }).first();
      expect(Buffer.from(keyRow.key_bytes).length).toBe(0);
      expect(Number(keyRow.erased_at_ms)).toBe(clock);
      const keys = await keysOf(kept.sessionId, erased.sessionId, `never-${run}`);
      expect(keys.map((k) => [k.sessionId, k.erased, k.key.length])).toEqual([
        [kept.sessionId, false, 32],
        [erased.sessionId, true, 0],
        [`never-${run}`, false, 0],
      ]);

      // Rows keep their id, seq, type, event id and published state; the events keep no content.
      const after = await db("session_event")
        .where({ session_id: erased.sessionId })
        .orderBy("seq")
        .select("id", "seq", "type", "published_at_ms", "event_id");
      expect(after.slice(0, before.length)).toEqual(before);
      const events = await readEvents(erased.sessionId);
      expect(events.map((e) => e.type).at(-1)).toBe("SessionDeleted");
      for (const event of events) expect(contentOf(event, undefined)).toBeUndefined();
      expect(JSON.stringify(events)).not.toContain("sealed");
      const created = events[0]?.payload;
      expect(created?.$case === "sessionCreated" && created.value.inheritedSummaryFrom).toBe(source.sessionId);

      const session = await commands.getSession(
        GetSessionRequest.fromPartial({ sessionId: erased.sessionId }),
        LOCAL_HARNESS,
      );
      expect(session).toMatchObject({ deleted: true, summary: "", inheritedSummaryFrom: source.sessionId });
      expect(
        await rejection(
          commands.listMessages(ListMessagesRequest.fromPartial({ sessionId: erased.sessionId }), LOCAL_HARNESS),
        ),
      ).toBeInstanceOf(NotFoundError);

      // The live session: ListMessages, GetSession and its events still give its content.
      const messages = await commands.listMessages(
        ListMessagesRequest.fromPartial({ sessionId: kept.sessionId }),
        LOCAL_HARNESS,
      );
      expect(JSON.stringify(messages)).toContain(kept.canaries[0]);
      const keptSession = await commands.getSession(
        GetSessionRequest.fromPartial({ sessionId: kept.sessionId }),
        LOCAL_HARNESS,
      );
      expect(keptSession.summary).toContain(kept.canaries.at(-1));
      const keptKey = await keyOf(kept.sessionId);
      const keptEvents = await readEvents(kept.sessionId);
      expect(JSON.stringify(keptEvents.map((e) => contentOf(e, keptKey)))).toContain(kept.canaries[0]);
    });

    /** Turns a session into one written before keys existed: schema-1 plaintext events, no key row. */
    async function makeLegacy(sessionId: string) {
      const key = await keyOf(sessionId);
      const rows = await db("session_event").where({ session_id: sessionId }).select("id", "payload");
      for (const row of rows) {
        const event = decodeSessionEvent(new Uint8Array(row.payload));
        const fields = contentOf(event, key);
        const payload = event.payload;
        if (fields !== undefined) {
          if (payload.$case === "messageSaved")
            payload.value = { ...payload.value, content: fields.content, sealed: undefined };
          if (payload.$case === "compactionCommitted")
            payload.value = { ...payload.value, summary: fields.summary, sealed: undefined };
          if (payload.$case === "sessionCreated")
            payload.value = { ...payload.value, inheritedSummary: fields.inheritedSummary, sealed: undefined };
        }
        await db("session_event")
          .where({ id: row.id })
          .update({ payload: Buffer.from(encodeSessionEvent({ ...event, schemaVersion: 1, payload })) });
      }
      await db("session_data_key").where({ session_id: sessionId }).delete();
    }

    it(`erases schema-1 plaintext rows of a session from before keys, ${ERASE_EVENT_BATCH} rows per UPDATE at most`, async () => {
      const legacy = await fullSession("legacy");
      await makeLegacy(legacy.sessionId);
      // A long log: enough schema-1 MessageSaved rows for three rewrite rounds.
      const extra = 2 * ERASE_EVENT_BATCH + 10;
      const lastSeq = Number((await db("session").where({ session_id: legacy.sessionId }).first()).last_seq);
      const rows = Array.from({ length: extra }, (_, i) => {
        const seq = lastSeq + 1 + i;
        const event: SessionEvent = {
          eventId: randomUUID(),
          sessionId: legacy.sessionId,
          seq,
          occurredAtMs: clock,
          schemaVersion: 1,
          type: "MessageSaved",
          payload: {
            $case: "messageSaved",
            value: {
              messageId: `m-${seq}`,
              role: Role.ROLE_USER,
              content: [text(legacy.canaries[0] ?? "")],
              thinkingChars: 0,
              localDate: "2026-10-13",
            },
          },
        };
        return {
          event_id: event.eventId,
          session_id: legacy.sessionId,
          seq,
          type: "MessageSaved",
          payload: Buffer.from(encodeSessionEvent(event)),
          occurred_at_ms: clock,
          traceparent: null,
          published_at_ms: i % 2 === 0 ? 7 : null,
        };
      });
      await db.batchInsert("session_event", rows, 200);
      await db("session")
        .where({ session_id: legacy.sessionId })
        .update({ last_seq: lastSeq + extra });
      expect((await canaryHits(db, [legacy.canaries[0] ?? ""])).some((h) => h.includes("session_event"))).toBe(true);

      const rewrites = vi.spyOn(SessionTransaction.prototype, "replaceEventPayloads");
      try {
        await commands.deleteSession(DeleteSessionRequest.fromPartial({ sessionId: legacy.sessionId }), LOCAL_HARNESS);
        const sizes = rewrites.mock.calls.map(([batch]) => batch.length);
        expect(Math.max(...sizes)).toBeLessThanOrEqual(ERASE_EVENT_BATCH);
        // Every row with content rewritten exactly once: fullSession's three messages and compaction, and the extra ones.
        expect(sizes.reduce((a, b) => a + b, 0)).toBe(4 + extra);
        expect(sizes.length).toBe(Math.ceil((5 + extra + 1) / ERASE_EVENT_BATCH));
      } finally {
        rewrites.mockRestore();
      }
      expect(await canaryHits(db, legacy.canaries)).toEqual([]);
      expect(
        Number(
          (await db("session_event").where({ session_id: legacy.sessionId, published_at_ms: 7 }).count({ n: "*" }))[0]
            ?.n,
        ),
      ).toBe(extra / 2);
      // It had no key: it has an erased one now, so consumers are told it is erased, not unknown.
      expect((await keysOf(legacy.sessionId))[0]).toMatchObject({ erased: true, keyId: "" });
    });

    it("gives a session from before keys a key with its next write, in that write's transaction", async () => {
      const bySave = await createSession();
      await makeLegacy(bySave);
      const fresh = new SessionCommands(deps());
      expect((await keysOf(bySave))[0]).toMatchObject({ erased: false, key: Buffer.alloc(0) });
      const saved = await save(bySave, { content: [text("after the upgrade")] }, fresh);
      const key = await keyOf(bySave);
      const event = (await readEvents(bySave)).find((e) => e.seq === saved.seq);
      expect(contentOf(event as SessionEvent, key)?.content[0]?.part).toMatchObject({
        $case: "text",
        value: { text: "after the upgrade" },
      });

      // A refused write creates no key: nothing of it is committed.
      const refused = await createSession();
      await makeLegacy(refused);
      await rejection(save(refused, { content: [text("stale")], expectedSeq: 99 }, new SessionCommands(deps())));
      expect(await db("session_data_key").where({ session_id: refused }).first()).toBeUndefined();

      // CommitCompaction, the other sealed write, creates it too.
      const byCompaction = await createSession();
      const boundary = await save(byCompaction, { content: [text("first")] });
      await makeLegacy(byCompaction);
      const committed = await new SessionCommands(deps()).commitCompaction(
        CommitCompactionRequest.fromPartial({
          sessionId: byCompaction,
          boundaryMessageId: boundary.messageId,
          summary: "a summary",
        }),
        LOCAL_HARNESS,
      );
      const compaction = (await readEvents(byCompaction)).find((e) => e.seq === committed.seq) as SessionEvent;
      expect(contentOf(compaction, await keyOf(byCompaction))?.summary).toBe("a summary");
    });

    it("seals with the key this process holds without reading it; a process without it reads the stored one", async () => {
      const sessionId = await createSession();
      const original = await keyOf(sessionId);
      // The stored key replaced behind the process's back: only a process that reads it sees the change.
      const replaced = newDataKey();
      await db("session_data_key")
        .where({ session_id: sessionId })
        .update({ key_id: replaced.keyId, key_bytes: Buffer.from(replaced.key) });
      const cached = await save(sessionId, { content: [text("cached")] });
      const read = await save(sessionId, { content: [text("read")] }, new SessionCommands(deps()));
      const events = await readEvents(sessionId);
      const sealedKeyId = (seq: number) => {
        const payload = events.find((e) => e.seq === seq)?.payload;
        return payload?.$case === "messageSaved" ? payload.value.sealed?.keyId : undefined;
      };
      expect(sealedKeyId(cached.seq)).toBe(original.keyId);
      expect(sealedKeyId(read.seq)).toBe(replaced.keyId);
    });

    it("keeps last_event_at_ms at the newest event's time, which retention measures idleness by", async () => {
      const sessionId = await createSession();
      const lastEventAt = async () =>
        Number((await db("session").where({ session_id: sessionId }).first()).last_event_at_ms);
      expect(await lastEventAt()).toBe(clock);
      clock += 5_000;
      const saved = await save(sessionId, { content: [text("later")] });
      expect(await lastEventAt()).toBe(clock);
      clock += 5_000;
      await compact(sessionId, saved.messageId, "summary");
      expect(await lastEventAt()).toBe(clock);
    });

    it("retention erases sessions idle past it, in batches, exactly like DeleteSession; active ones stay", async () => {
      const lines: { msg: string; erased?: number }[] = [];
      const logger = createLogger({
        service: "test",
        destination: new Writable({
          write(chunk, _encoding, done) {
            lines.push(JSON.parse(String(chunk)));
            done();
          },
        }),
      });
      const store = new SessionStore(db);
      const sweep = (retentionDays: number, batchSize = 2) =>
        new RetentionSweep({ commands, store, logger, now: () => clock, retentionDays, intervalMs: 60_000, batchSize });
      // Everything created so far is made idle: this test looks at its own sessions only.
      clock += 1_000 * DAY_MS;
      await sweep(1, 100).runOnce();
      lines.length = 0;

      const idle = await Promise.all(["a", "b", "c", "d", "e"].map((label) => fullSession(`idle${label}`)));
      clock += 20 * DAY_MS;
      const active = await fullSession("active");
      clock += 11 * DAY_MS;
      await save(active.sessionId, { content: [text("still here")] });
      clock += 20 * DAY_MS;
      // Idle for 51 days and active 20 days ago, with a 30-day retention.
      const listed = vi.spyOn(store, "idleSessions");
      const result = await sweep(30).runOnce();
      expect(result).toEqual({ expired: 5, leftovers: 0, failed: 0 });
      // Batches of 2: three rounds with sessions and none more (the last one was short).
      expect(listed.mock.calls.map(([, limit]) => limit)).toEqual([2, 2, 2]);
      expect(
        await canaryHits(
          db,
          idle.flatMap((s) => s.canaries),
        ),
      ).toEqual([]);
      for (const { sessionId } of idle) {
        expect((await readEvents(sessionId)).at(-1)?.type).toBe("SessionDeleted");
        expect((await keysOf(sessionId))[0]?.erased).toBe(true);
      }
      expect(await canaryHits(db, [active.canaries[0] ?? ""])).not.toEqual([]);
      expect((await readEvents(active.sessionId)).at(-1)?.type).toBe("MessageSaved");
      expect(lines.filter((l) => l.msg === "idle sessions erased").map((l) => l.erased)).toEqual([2, 2, 1]);

      // Off (0 days), the sweep erases nothing however idle a session is.
      clock += 365 * DAY_MS;
      expect(await sweep(0).runOnce()).toEqual({ expired: 0, leftovers: 0, failed: 0 });
      expect((await readEvents(active.sessionId)).at(-1)?.type).toBe("MessageSaved");
      // A session that became active after the sweep listed it is not erased (checked under its lock).
      expect(await commands.expireSession(active.sessionId, clock - 400 * DAY_MS)).toBe(false);
    });

    it("erases, at start, the sessions deleted before erasure existed, without a second SessionDeleted", async () => {
      const old = await fullSession("old-delete");
      await makeLegacy(old.sessionId);
      // Deleted the old way: flagged, content left in place.
      const lastSeq = Number((await db("session").where({ session_id: old.sessionId }).first()).last_seq);
      await db("session").where({ session_id: old.sessionId }).update({ deleted: true });
      const store = new SessionStore(db);
      const result = await new RetentionSweep({
        commands,
        store,
        logger: createLogger({ service: "test", level: "silent" }),
        now: () => clock,
        retentionDays: 0,
        intervalMs: 60_000,
      }).runOnce({ leftovers: true });
      expect(result.leftovers).toBeGreaterThanOrEqual(1);
      expect(await canaryHits(db, old.canaries)).toEqual([]);
      expect((await db("session").where({ session_id: old.sessionId }).first()).summary).toBe("");
      expect(Number((await db("session").where({ session_id: old.sessionId }).first()).last_seq)).toBe(lastSeq);
      expect((await keysOf(old.sessionId))[0]?.erased).toBe(true);
      expect(await store.unerasedDeletedSessions(10)).toEqual([]);
    });
  });
}

describe("migration 0006: last activity of existing sessions", () => {
  it("takes the newest event's time, not the creation time, so an old but active session is not idle", async () => {
    const db = createMemoryDatabase();
    try {
      await runMigrations(db, sessionEventsMigrations.slice(0, 5));
      const row = (sessionId: string, createdAtMs: number) => ({
        session_id: sessionId,
        owner: "u1",
        timezone: "UTC",
        kind: "main",
        last_seq: 2,
        summary: "",
        created_at_ms: createdAtMs,
      });
      await db("session").insert([row("active", 1_000), row("empty", 2_000)]);
      await db("session_event").insert(
        [1, 2].map((seq) => ({
          event_id: `e-${seq}`,
          session_id: "active",
          seq,
          type: "MessageSaved",
          payload: Buffer.from([1]),
          occurred_at_ms: seq * 9_000_000,
        })),
      );
      await runMigrations(db, sessionEventsMigrations);
      const times = await db("session").orderBy("session_id").select("session_id", "last_event_at_ms");
      expect(times.map((t) => [t.session_id, Number(t.last_event_at_ms)])).toEqual([
        ["active", 18_000_000],
        ["empty", 2_000],
      ]);
    } finally {
      await db.destroy();
    }
  });
});

let mariadb: TestDatabase;
suite("erasure on real MariaDB", async () => {
  mariadb = await createTestDatabase("session_erasure");
  const db = createDatabase(mariadb.url, { multipleStatements: true });
  return {
    db,
    close: async () => {
      await db.destroy();
      await mariadb.drop();
    },
  };
});
suite("erasure on SQLite", async () => {
  const db = createMemoryDatabase();
  return { db, close: () => db.destroy() };
});
