import { InternalError, ValidationError } from "@prefix-guard/errors";
import { type DataKey, newDataKey, sealFields } from "@prefix-guard/events";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { describe, expect, it } from "vitest";
import { projectedEventFromProto } from "./content-mapping";
import { type DataKeySource, SealedEventOpener, type SessionKeyState } from "./sealed-events";

const text = (value: string) => ({ part: { $case: "text" as const, value: { text: value } } });

function envelope(sessionId: string, seq: number, payload: NonNullable<SessionEvent["payload"]>): SessionEvent {
  return {
    eventId: `e-${sessionId}-${seq}`,
    sessionId,
    seq,
    occurredAtMs: 1_000 + seq,
    schemaVersion: 2,
    type: "",
    payload,
  };
}

function created(sessionId: string, key: DataKey | null, inheritedSummary = "上次聊到压测"): SessionEvent {
  const value = {
    owner: "u1",
    workspace: "/w",
    timezone: "Asia/Shanghai",
    kind: SessionKind.SESSION_KIND_MAIN,
    parentSessionId: "",
    inheritedSummaryFrom: "",
    inheritedSummary: key === null ? inheritedSummary : "",
    locale: "",
    scope: "",
    sealed: key === null ? undefined : sealFields(key, sessionId, 1, { inheritedSummary }),
  };
  return envelope(sessionId, 1, { $case: "sessionCreated", value });
}

function saved(sessionId: string, seq: number, key: DataKey | null, words = `第${seq}条`): SessionEvent {
  const content = [text(words)];
  return envelope(sessionId, seq, {
    $case: "messageSaved",
    value: {
      messageId: `${sessionId}:m${seq}`,
      role: Role.ROLE_USER,
      content: key === null ? content : [],
      thinkingChars: 0,
      localDate: "2026-10-12",
      sealed: key === null ? undefined : sealFields(key, sessionId, seq, { content }),
    },
  });
}

function compaction(sessionId: string, seq: number, key: DataKey): SessionEvent {
  return envelope(sessionId, seq, {
    $case: "compactionCommitted",
    value: {
      generation: 1,
      boundaryMessageId: `${sessionId}:m2`,
      summary: "",
      sealed: sealFields(key, sessionId, seq, { summary: "用户在压测重试逻辑" }),
    },
  });
}

/** GetDataKeys over a map; records every call. */
class Keys implements DataKeySource {
  readonly calls: string[][] = [];
  readonly live = new Map<string, DataKey>();
  readonly erased = new Set<string>();
  async getDataKeys(sessionIds: readonly string[]): Promise<ReadonlyMap<string, SessionKeyState>> {
    this.calls.push([...sessionIds]);
    return new Map(
      sessionIds.map((id): [string, SessionKeyState] => {
        const key = this.live.get(id);
        if (key !== undefined) return [id, { state: "live", key }];
        return [id, { state: this.erased.has(id) ? "erased" : "unknown" }];
      }),
    );
  }
  add(sessionId: string): DataKey {
    const key = newDataKey();
    this.live.set(sessionId, key);
    return key;
  }
}

function contentOf(event: SessionEvent | undefined): unknown {
  const payload = event?.payload;
  if (payload?.$case === "messageSaved") return payload.value.content;
  if (payload?.$case === "compactionCommitted") return payload.value.summary;
  if (payload?.$case === "sessionCreated") return payload.value.inheritedSummary;
  throw new Error("no content payload");
}

describe("SealedEventOpener", () => {
  it("opens MessageSaved, CompactionCommitted and SessionCreated into their plaintext fields", async () => {
    const keys = new Keys();
    const key = keys.add("s1");
    const opener = new SealedEventOpener(keys);
    const [c, m, k] = await opener.open([created("s1", key), saved("s1", 2, key), compaction("s1", 3, key)]);
    expect(contentOf(c)).toBe("上次聊到压测");
    expect(contentOf(m)).toMatchObject([text("第2条")]);
    expect(contentOf(k)).toBe("用户在压测重试逻辑");
    for (const event of [c, m, k]) expect(event?.payload?.value).toHaveProperty("sealed", undefined);
    // The mapping then sees exactly what a schema 1 event would give it.
    expect(projectedEventFromProto(m as SessionEvent)).toEqual(projectedEventFromProto(saved("s1", 2, null)));
  });

  it("passes plaintext (schema 1) events through untouched and asks for no key", async () => {
    const keys = new Keys();
    const opener = new SealedEventOpener(keys);
    const events = [created("p1", null), saved("p1", 2, null)];
    const opened = await opener.open(events);
    expect(opened[0]).toBe(events[0]);
    expect(opened[1]).toBe(events[1]);
    expect(keys.calls).toEqual([]);
  });

  it("asks once per 100 sessions lacking a key, and not again for cached keys", async () => {
    const keys = new Keys();
    const batch: SessionEvent[] = [];
    for (let i = 0; i < 250; i += 1) {
      const key = keys.add(`b${i}`);
      batch.push(saved(`b${i}`, 2, key), saved(`b${i}`, 3, key));
    }
    const opener = new SealedEventOpener(keys);
    await opener.open(batch);
    expect(keys.calls.map((ids) => ids.length)).toEqual([100, 100, 50]);
    await opener.open(batch.map((event) => ({ ...event })));
    expect(keys.calls).toHaveLength(3);
    expect(opener.cachedKeys).toBe(250);
  });

  it("bounds its key cache by count, dropping the least recently used key", async () => {
    const keys = new Keys();
    const [a, b, c] = ["a", "b", "c"].map((id) => keys.add(id)) as [DataKey, DataKey, DataKey];
    const opener = new SealedEventOpener(keys, { maxKeys: 2 });
    await opener.open([saved("a", 2, a), saved("b", 2, b)]);
    await opener.open([saved("a", 3, a)]); // a is now the most recently used
    await opener.open([saved("c", 2, c)]); // evicts b
    expect(opener.cachedKeys).toBe(2);
    keys.calls.length = 0;
    await opener.open([saved("a", 4, a), saved("c", 3, c), saved("b", 3, b)]);
    expect(keys.calls).toEqual([["b"]]);
  });

  it("applies an erased or unknown session's events with no content, without failing", async () => {
    const keys = new Keys();
    const gone = newDataKey();
    keys.erased.add("erased");
    const dropped: string[] = [];
    const opener = new SealedEventOpener(keys, {
      onContentErased: (event, state) => dropped.push(`${event.sessionId}/${event.seq}/${state}`),
    });
    const opened = await opener.open([
      created("erased", gone),
      saved("erased", 2, gone),
      compaction("erased", 3, gone),
      saved("vanished", 2, newDataKey()),
    ]);
    expect(opened.map(contentOf)).toEqual(["", [], "", []]);
    expect(dropped).toEqual(["erased/1/erased", "erased/2/erased", "erased/3/erased", "vanished/2/unknown"]);
    // An erased answer is not cached: a re-created id is asked about again.
    await opener.open([saved("erased", 4, gone)]);
    expect(keys.calls).toHaveLength(2);
  });

  it("rejects a seal its session's key does not open (changed bytes, another key) as a ValidationError", async () => {
    const keys = new Keys();
    const key = keys.add("t1");
    const opener = new SealedEventOpener(keys);
    const tampered = saved("t1", 2, key);
    if (tampered.payload?.$case !== "messageSaved" || tampered.payload.value.sealed === undefined) throw new Error();
    tampered.payload.value.sealed.ciphertext[0] = (tampered.payload.value.sealed.ciphertext[0] ?? 0) ^ 1;
    const wrongKey = saved("t1", 3, newDataKey());
    for (const event of [tampered, wrongKey]) {
      const error = await opener.open([event]).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ field: "sealed", reason: "sealed_content_unreadable" });
    }
    // A seal moved to another seq does not open either (the AAD binds it to its event).
    const moved = { ...saved("t1", 4, key), seq: 5 };
    await expect(opener.open([moved])).rejects.toBeInstanceOf(ValidationError);
  });

  it("forgets a session's key at its SessionDeleted", async () => {
    const keys = new Keys();
    const key = keys.add("d1");
    const opener = new SealedEventOpener(keys);
    await opener.open([saved("d1", 2, key)]);
    expect(opener.cachedKeys).toBe(1);
    await opener.open([envelope("d1", 3, { $case: "sessionDeleted", value: {} })]);
    expect(opener.cachedKeys).toBe(0);
  });

  it("without a key source, fails on sealed content instead of applying it empty", async () => {
    const opener = new SealedEventOpener(null);
    await expect(opener.open([saved("n1", 2, newDataKey())])).rejects.toBeInstanceOf(InternalError);
    expect(await opener.open([saved("n1", 2, null)])).toHaveLength(1);
  });

  it("projectedEventFromProto refuses an event whose seal was not opened", () => {
    expect(() => projectedEventFromProto(saved("u1", 2, newDataKey()))).toThrow(InternalError);
  });
});
