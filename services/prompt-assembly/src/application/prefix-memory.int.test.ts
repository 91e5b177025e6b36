// DurablePrefixMemory on MariaDB: a session this process wrote last is recorded in one round trip
// (each row written only if still at the version remembered), and a row another replica wrote since
// sends its build through the locked path, which compares with what that replica left.

import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openMariaDbStore, outboxPrefixEvents, sha256, type TestStore } from "../../test/application-fixtures";
import { FingerprintStore } from "../adapters/mysql/fingerprint-store";
import { fingerprintRequest } from "../domain/fingerprint";
import type { ChatMessage, ChatRequest } from "../domain/model";
import { DurablePrefixMemory, type PrefixRecord } from "./build-request/prefix-memory";

function turns(count: number, rewriteAt = -1): ChatMessage[] {
  return Array.from({ length: count }, (_, index) => ({
    role: index % 2 === 0 ? "user" : "assistant",
    content: [{ type: "text", text: `${index === rewriteAt ? "edited " : ""}turn ${index}` }],
  }));
}

function record(sessionId: string, messages: readonly ChatMessage[], requestId: string): PrefixRecord {
  const chatRequest: ChatRequest = {
    model: "claude-sonnet-4-5",
    system: [{ key: "system-prompt", text: "You are an agent." }],
    tools: [],
    messages,
  };
  return {
    sessionId,
    requestId,
    fingerprint: fingerprintRequest(chatRequest, sha256),
    chatRequest,
    generation: 0,
    rulesDecision: "RETAINED",
    workspace: "/ws",
    scope: "",
    owner: "u1",
    droppedTurns: 0,
    anchorDate: "2026-10-12",
    dateNotices: [],
    estimatedTokens: 100,
    model: chatRequest.model,
  };
}

describe("DurablePrefixMemory on MariaDB", () => {
  let store: TestStore;
  let eventCounter = 0;
  const replica = () => {
    const fingerprints = new FingerprintStore(store.db);
    const memory = new DurablePrefixMemory({
      store: fingerprints,
      now: () => 1_760_000_000_000,
      newEventId: () => `event-${++eventCounter}`,
      traceHeaders: () => ({}),
      cacheBytes: 1024 * 1024,
      logger: { warn: () => undefined },
    });
    return {
      memory,
      locked: vi.spyOn(fingerprints, "recordGroup"),
      conditional: vi.spyOn(fingerprints, "writeIfUnchanged"),
    };
  };
  const storedVersion = async (sessionId: string) =>
    Number(
      (
        (await store.db("pa_prefix_fingerprint").where({ session_id: sessionId }).first("version")) as {
          version: number;
        }
      ).version,
    );
  /** The session's outbox events in order, each as "type request_id". */
  const publishedEvents = async (sessionId: string) =>
    (await outboxPrefixEvents(store.db, sessionId)).map((event) => `${event.type} ${event.requestId}`);

  beforeAll(async () => {
    store = await openMariaDbStore("prefix_memory");
  });
  afterAll(async () => {
    await store.close();
  });

  it("records a session it wrote last in one conditional write, without locking and reading first", async () => {
    const a = replica();
    const first = await a.memory.record(record("s-own", turns(2), "r1"));
    const second = await a.memory.record(record("s-own", turns(4), "r2"));
    const third = await a.memory.record(record("s-own", turns(6, 1), "r3"));
    expect(first.firstBuild).toBe(true);
    expect(second).toMatchObject({ firstBuild: false, changed: false });
    expect(third).toMatchObject({ changed: true, historyRewritten: true, firstChangedMessageIndex: 1 });
    expect(a.locked).toHaveBeenCalledTimes(1);
    expect(a.conditional).toHaveBeenCalledTimes(2);
    expect(await storedVersion("s-own")).toBe(3);
    expect(await publishedEvents("s-own")).toEqual([
      "FingerprintObserved r1",
      "FingerprintObserved r2",
      "FingerprintObserved r3",
      "PrefixChanged r3",
    ]);
  });

  it("compares with what another replica wrote since, and publishes each build's events once", async () => {
    const a = replica();
    const b = replica();
    await a.memory.record(record("s-shared", turns(2), "a1"));
    // Replica b rewrote turn 0; a still remembers its own row (version 1).
    const fromB = await b.memory.record(record("s-shared", turns(4, 0), "b1"));
    expect(fromB).toMatchObject({ changed: true, historyRewritten: true, firstChangedMessageIndex: 0 });
    // a's next build appends to b's: against its own memory it would be a rewrite at turn 0.
    const fromA = await a.memory.record(record("s-shared", turns(6, 0), "a2"));
    expect(fromA).toMatchObject({ changed: false, historyRewritten: false });
    expect(a.conditional).toHaveBeenCalledTimes(1);
    expect(a.locked).toHaveBeenCalledTimes(2);
    expect(await storedVersion("s-shared")).toBe(3);
    expect(await publishedEvents("s-shared")).toEqual([
      "FingerprintObserved a1",
      "FingerprintObserved b1",
      "PrefixChanged b1",
      "FingerprintObserved a2",
    ]);
    // And a remembers its locked write again: the next build is one conditional write.
    await a.memory.record(record("s-shared", turns(8, 0), "a3"));
    expect(a.conditional).toHaveBeenCalledTimes(2);
    expect(a.locked).toHaveBeenCalledTimes(2);
  });

  it("records builds of many sessions arriving together, own and moved rows in one group", async () => {
    const a = replica();
    const b = replica();
    const ids = Array.from({ length: 6 }, (_, index) => `s-group-${index}`);
    for (const id of ids) await a.memory.record(record(id, turns(2), `${id}-1`));
    // b moves every other row.
    for (const id of ids.filter((_, index) => index % 2 === 0)) await b.memory.record(record(id, turns(4), `${id}-b`));
    const comparisons = await Promise.all(ids.map((id) => a.memory.record(record(id, turns(6), `${id}-2`))));
    expect(comparisons.every((comparison) => !comparison.changed && !comparison.firstBuild)).toBe(true);
    for (const [index, id] of ids.entries()) {
      expect(await storedVersion(id)).toBe(index % 2 === 0 ? 3 : 2);
      const observed = (await outboxPrefixEvents(store.db, id)).filter((event) => event.requestId === `${id}-2`);
      expect(observed.map((event) => event.type)).toEqual(["FingerprintObserved"]);
    }
  });
});
