// docs/decisions/crypto-shredding.md on prompt-assembly's side: schema 2 events (content sealed
// with the session's data key) are opened on the consumer path and on a build's ReadEvents
// catch-up; an erased session's events are applied without content (no DLQ), a seal that does not
// open goes to the DLQ alone, and a deleted session leaves no content in any table.

import { LOCAL_HARNESS } from "@prefix-guard/access";
import {
  createEmbeddedBus,
  embeddedBusMigrations,
  type IncomingMessage,
  PoisonMessageError,
  runEventConsumer,
  type Subscription,
} from "@prefix-guard/bus";
import { eventually, uniqueName } from "@prefix-guard/bus/testing";
import { runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase } from "@prefix-guard/db/testing";
import { NotFoundError } from "@prefix-guard/errors";
import { decodeSessionEvent, encodeSessionEvent } from "@prefix-guard/events";
import { silentLogger } from "@prefix-guard/logging";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assemblyCore,
  FakeRulesSnapshot,
  FakeSessionEvents,
  FixedClock,
  harnessRequest,
  RecordingLogger,
  STORES,
  shanghai,
  type TestStore,
} from "../../test/application-fixtures";

const T0 = shanghai("2026-10-12", "09:00");
/** Content only the erased session ever had: no table may hold it after the delete. */
const ERASED_MESSAGE = "身份证号 110101199003070000";
const ERASED_INHERITED = "上次聊到离职";
const ERASED_SUMMARY = "用户在谈薪资";
const ERASED_WORDS = [ERASED_MESSAGE, ERASED_INHERITED, ERASED_SUMMARY];

/** Every text column prompt-assembly stores, as one string per table. */
async function storedText(store: TestStore): Promise<Record<string, string>> {
  const tables = ["pa_session", "pa_message", "pa_prefix_fingerprint", "outbox_message"];
  const dump: Record<string, string> = {};
  for (const table of tables) {
    const rows = (await store.db(table).select("*")) as Record<string, unknown>[];
    dump[table] = JSON.stringify(
      rows.map((row) =>
        Object.fromEntries(
          Object.entries(row).map(([column, value]) => [
            column,
            Buffer.isBuffer(value) ? value.toString("utf8") : (value as unknown),
          ]),
        ),
      ),
    );
  }
  return dump;
}

describe.each(STORES)("sealed session events in prompt-assembly on $name", ({ open }) => {
  let store: TestStore;
  let counter = 0;
  const nextId = (label: string) => `${label}-${++counter}`;

  beforeAll(async () => {
    store = await open("pa_sealed");
  });
  afterAll(async () => store.close());

  function core(log: FakeSessionEvents) {
    const clock = new FixedClock(shanghai("2026-10-12", "10:00"));
    return assemblyCore({
      db: store.db,
      rules: new FakeRulesSnapshot(),
      sessions: log,
      keys: log,
      now: clock.now,
      logger: new RecordingLogger(),
    });
  }

  it("builds byte for byte the same body from sealed events as from plaintext ones", async () => {
    const bodies: string[] = [];
    for (const seal of [false, true]) {
      const log = new FakeSessionEvents({ seal });
      const pa = core(log);
      const sessionId = nextId(seal ? "sealed" : "plain");
      await log.createSession(sessionId, { atMs: T0, inheritedSummary: "上次聊到压测" });
      await log.saveMessage(sessionId, { atMs: T0 + 1_000, role: "user", content: "帮我看下压测重试" });
      await log.saveMessage(sessionId, {
        atMs: T0 + 2_000,
        role: "assistant",
        content: [
          { type: "text", text: "好的" },
          { type: "tool_call", callId: "c1", name: "shell", argumentsJson: '{"command":"date"}' },
        ],
      });
      await log.saveMessage(sessionId, {
        atMs: T0 + 3_000,
        role: "tool",
        content: [{ type: "tool_result", callId: "c1", text: "2026-10-12", isError: false }],
      });
      await log.commitCompaction(sessionId, {
        atMs: T0 + 4_000,
        generation: 1,
        boundaryMessageId: `${sessionId}:m3`,
        summary: "用户在压测重试逻辑",
      });
      const last = await log.saveMessage(sessionId, { atMs: T0 + 5_000, role: "user", content: "继续" });
      // The build reads every event through ReadEvents (nothing delivered to the projection).
      const built = await pa.builder.buildRequest(harnessRequest(sessionId, { minSeq: last.seq }), LOCAL_HARNESS);
      bodies.push(built.bodyJson.replaceAll(sessionId, "SESSION"));
      if (seal) {
        expect(log.keyCalls).toEqual([[sessionId]]);
        expect(bodies[1]).toContain("用户在压测重试逻辑");
        // The view is held in memory: a build it already covers asks session-events for nothing.
        const reads = log.readCalls;
        await pa.builder.buildRequest(harnessRequest(sessionId, { minSeq: last.seq }), LOCAL_HARNESS);
        expect(log.readCalls).toBe(reads);
        expect(log.keyCalls).toHaveLength(1);
        // A new message: ReadEvents brings it, its key is already cached.
        const next = await log.saveMessage(sessionId, { atMs: T0 + 6_000, role: "user", content: "再来" });
        const again = await pa.builder.buildRequest(harnessRequest(sessionId, { minSeq: next.seq }), LOCAL_HARNESS);
        expect(again.bodyJson).toContain("再来");
        expect(log.keyCalls).toHaveLength(1);
      }
    }
    expect(bodies[1]).toBe(bodies[0]);
  });

  it("consumer: erased sessions apply without content, an unopenable seal goes to the DLQ alone", async () => {
    const log = new FakeSessionEvents({ seal: true });
    const pa = core(log);
    const good = nextId("good");
    const tampered = nextId("tampered");
    const erased = nextId("erased");
    for (const sessionId of [good, tampered, erased]) {
      await log.createSession(sessionId, {
        atMs: T0,
        inheritedSummary: sessionId === erased ? ERASED_INHERITED : "上次",
      });
      await log.saveMessage(sessionId, {
        atMs: T0 + 1_000,
        role: "user",
        content: sessionId === erased ? ERASED_MESSAGE : `你好 ${sessionId}`,
      });
    }
    await log.commitCompaction(erased, {
      atMs: T0 + 2_000,
      generation: 1,
      boundaryMessageId: `${erased}:m2`,
      summary: ERASED_SUMMARY,
    });
    // Erased before prompt-assembly consumed any of it: the key is destroyed with the SessionDeleted.
    await log.deleteSession(erased, T0 + 3_000);
    const last = await log.saveMessage(tampered, { atMs: T0 + 4_000, role: "user", content: "被改过的" });
    if (last.payload?.$case !== "messageSaved" || last.payload.value.sealed === undefined) throw new Error("unsealed");
    const ciphertext = last.payload.value.sealed.ciphertext;
    ciphertext[3] = (ciphertext[3] ?? 0) ^ 0xff;

    const busDb = createMemoryDatabase();
    await runMigrations(busDb, embeddedBusMigrations);
    const bus = createEmbeddedBus({ db: busDb, logger: silentLogger(), pollIntervalMs: 20 });
    const topic = uniqueName("session-events");
    await bus.ensureTopics([
      { topic, partitions: 1 },
      { topic: `${topic}.dlq`, partitions: 1 },
    ]);
    // Every session's events, interleaved as one partition would carry them.
    const all = [good, tampered, erased]
      .flatMap((id) => log.events(id))
      .sort((a, b) => a.occurredAtMs - b.occurredAtMs);
    await bus.publish(
      topic,
      all.map((event) => ({ key: event.sessionId, value: encodeSessionEvent(event) })),
    );
    const dead: IncomingMessage[] = [];
    const dlq = await bus.subscribe({
      topic: `${topic}.dlq`,
      groupId: "dlq-reader",
      handleMessage: async (message) => void dead.push(message),
    });
    let subscription: Subscription | undefined;
    try {
      subscription = await runEventConsumer<SessionEvent>({
        bus,
        topic,
        groupId: "pa",
        logger: silentLogger(),
        decode: decodeSessionEvent,
        // As service.ts applies a batch.
        apply: async (events) => {
          try {
            await pa.projection.applyOrCatchUp(events, log);
          } catch (error) {
            if (error instanceof NotFoundError) throw new PoisonMessageError(error.message, { cause: error });
            throw error;
          }
          pa.views.forgetEnded(events);
        },
      });
      await eventually(
        async () =>
          (await pa.projection.projectionSeq(good)) === 2 &&
          (await pa.projection.projectionSeq(erased)) === 4 &&
          dead.length === 1,
        { what: "the batch applied and one dead letter" },
      );
    } finally {
      await subscription?.stop();
      await dlq.stop();
      await bus.close();
      await busDb.destroy();
    }

    // One request for the whole batch's sessions first (the one-by-one retry after the poison asks again).
    expect([...(log.keyCalls[0] ?? [])].sort()).toEqual([erased, good, tampered].sort());
    expect(dead).toHaveLength(1);
    expect(dead[0]?.key).toBe(tampered);
    expect(dead[0]?.headers["pg-dlq-reason"]).toBe("poison");
    expect(dead[0]?.headers["pg-dlq-error"]).toContain(
      `sealed content of ${tampered} seq ${last.seq} cannot be opened`,
    );
    expect(await pa.projection.projectionSeq(tampered)).toBe(2);

    const view = await pa.views.load(good, 2, LOCAL_HARNESS);
    expect(view.summary).toBe("上次");
    expect(view.messages.map((message) => message.content)).toEqual([[{ type: "text", text: `你好 ${good}` }]]);

    const row = await store.db("pa_session").where({ session_id: erased }).first();
    expect(row).toMatchObject({ summary: null, last_seq: 4, generation: 1 });
    expect(Boolean(row?.deleted)).toBe(true);
    expect(await store.db("pa_message").where({ session_id: erased }).count({ n: "*" }).first()).toMatchObject({
      n: 0,
    });
    const dump = await storedText(store);
    for (const [table, text] of Object.entries(dump)) {
      for (const words of ERASED_WORDS) expect(text.includes(words), `${table} holds "${words}"`).toBe(false);
    }
  });

  it("a build's catch-up applies an erased session's sealed events without content, then says deleted", async () => {
    const log = new FakeSessionEvents({ seal: true });
    const pa = core(log);
    const sessionId = nextId("erased-build");
    await log.createSession(sessionId, { atMs: T0, inheritedSummary: ERASED_INHERITED });
    await log.saveMessage(sessionId, { atMs: T0 + 1_000, role: "user", content: ERASED_MESSAGE });
    await log.deleteSession(sessionId, T0 + 2_000);
    await expect(pa.views.load(sessionId, 0, LOCAL_HARNESS)).rejects.toMatchObject({ reason: "session_deleted" });
    expect(log.keyCalls).toEqual([[sessionId]]);
  });
});
