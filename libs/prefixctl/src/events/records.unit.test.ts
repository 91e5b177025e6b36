import { cloudEventHeaders, encodeSessionEvent, Topics } from "@prefix-guard/events";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { LlmUsageEvent } from "@prefix-guard/proto/events/v1/usage_events";
import { describe, expect, it } from "vitest";
import { FIT, WIDE } from "../format/table";
import { formatTailRecord, type TailRecord, tailRecordToJson } from "./records";

const occurredAtMs = Date.UTC(2025, 0, 31, 23, 59, 58, 7);
const event = {
  eventId: "01890f3a-7b1c-7d2e-8f00-0123456789ab",
  sessionId: "sess-811",
  seq: 3,
  occurredAtMs,
  schemaVersion: 2,
  type: "MessageSaved",
  payload: {
    $case: "messageSaved" as const,
    value: { messageId: "m-3", role: Role.ROLE_USER, content: [], thinkingChars: 0, localDate: "2025-02-01" },
  },
};

const saved: TailRecord = {
  topic: "session.events.v1",
  partition: 4,
  offset: "17",
  key: "sess-811",
  value: encodeSessionEvent(event),
  headers: {
    ...cloudEventHeaders(Topics.sessionEvents, "session-events", event),
    "pg-event-type": "MessageSaved",
    "pg-seq": "3",
  },
};

describe("tailRecordToJson", () => {
  it("gives the place, the CloudEvents attributes by spec name and the envelope as protobuf JSON", () => {
    const json = tailRecordToJson(saved);
    expect(json).toMatchObject({
      topic: "session.events.v1",
      partition: 4,
      offset: "17",
      key: "sess-811",
      ce: {
        specversion: "1.0",
        id: event.eventId,
        source: "prefix-guard/session-events",
        type: "prefixguard.session.events.v1.MessageSaved",
        time: "2025-01-31T23:59:58.007Z",
        subject: "sess-811",
        datacontenttype: "application/protobuf",
      },
      event: {
        eventId: event.eventId,
        seq: 3,
        type: "MessageSaved",
        messageSaved: { messageId: "m-3", role: "ROLE_USER" },
      },
    });
    expect(json).not.toHaveProperty("dlq_reason");
    expect(json).not.toHaveProperty("decode_error");
  });

  it("on a DLQ: decodes with the main topic's envelope and adds the reason and error", () => {
    const dead = {
      ...saved,
      topic: "session.events.v1.dlq",
      headers: { ...saved.headers, "pg-dlq-reason": "poison", "pg-dlq-error": "seq: gap" },
    };
    expect(tailRecordToJson(dead)).toMatchObject({
      dlq_reason: "poison",
      dlq_error: "seq: gap",
      ce: { id: event.eventId },
      event: { seq: 3 },
    });
  });

  it("an undecodable record is shown with the error, not dropped", () => {
    const json = tailRecordToJson({ ...saved, value: Uint8Array.from([0xff, 0xff, 0xff]) });
    expect(json.decode_error).toMatch(/^undecodable session\.events\.v1 record: /);
    expect(json).not.toHaveProperty("event");
  });

  it("decodes each topic with its own envelope", () => {
    const usage = LlmUsageEvent.fromPartial({
      eventId: "u-1",
      sessionId: "sess-811",
      occurredAtMs,
      schemaVersion: 1,
      type: "UsageRecorded",
      payload: { $case: "usage", value: { requestId: "r-1", model: "gpt-5", promptTokens: 2048, cachedTokens: 1024 } },
    });
    const json = tailRecordToJson({
      ...saved,
      topic: "llm.usage.v1",
      value: LlmUsageEvent.encode(usage).finish(),
      headers: cloudEventHeaders(Topics.llmUsage, "cache-monitor", usage),
    });
    expect(json.event).toMatchObject({ usage: { requestId: "r-1", promptTokens: 2048, cachedTokens: 1024 } });
    expect(json.ce.type).toBe("prefixguard.llm.usage.v1.UsageRecorded");
  });
});

describe("formatTailRecord", () => {
  it("prints when, where, what, seq and ce_id, then the session and the payload indented", () => {
    const [head, body] = formatTailRecord(saved, FIT).split("\n");
    expect(head).toBe(`2025-01-31T23:59:58.007Z  session.events.v1[4]@17  MessageSaved  seq=3  id=${event.eventId}`);
    expect(body).toMatch(/^ {4}session sess-811 {2}\{"messageId":"m-3","role":"ROLE_USER"/);
  });

  it("marks a DLQ record with its reason, and a record written before the ce_* headers by its envelope's time", () => {
    const { ce_time: _time, ce_type: _type, ce_id: _id, ...older } = saved.headers;
    const text = formatTailRecord(
      { ...saved, topic: "session.events.v1.dlq", headers: { ...older, "pg-dlq-reason": "poison" } },
      FIT,
    );
    expect(text.split("\n")[0]).toBe(
      "2025-01-31T23:59:58.007Z  session.events.v1.dlq[4]@17  MessageSaved  seq=3  dlq=poison  id=-",
    );
  });

  it("fits 120 columns unless wide", () => {
    const long = { ...saved, key: "s".repeat(128) };
    for (const line of formatTailRecord(long, FIT).trimEnd().split("\n"))
      expect([...line].length).toBeLessThanOrEqual(120);
    expect(formatTailRecord(long, WIDE)).toContain("s".repeat(128));
  });
});
