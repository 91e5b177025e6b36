import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import {
  cloudEventAttributes,
  cloudEventDataSchema,
  cloudEventHeaders,
  cloudEventType,
  EVENT_CONTRACT_VERSION,
  TOPIC_ENVELOPES,
} from "./cloudevents";
import { Topics } from "./topics";

const saved = {
  eventId: "01890f3a-7b1c-7d2e-8f00-0123456789ab",
  sessionId: "sess-811",
  occurredAtMs: Date.UTC(2025, 0, 31, 23, 59, 58, 7),
  type: "MessageSaved",
};

describe("cloudEventHeaders: the Kafka binding's binary mode", () => {
  it("writes every attribute from the envelope, the topic and the producer", () => {
    expect(cloudEventHeaders(Topics.sessionEvents, "session-events", saved)).toEqual({
      ce_specversion: "1.0",
      ce_id: "01890f3a-7b1c-7d2e-8f00-0123456789ab",
      ce_source: "prefix-guard/session-events",
      ce_type: "prefixguard.session.events.v1.MessageSaved",
      ce_time: "2025-01-31T23:59:58.007Z",
      ce_subject: "sess-811",
      "content-type": "application/protobuf",
      ce_dataschema: `urn:prefixguard:proto:prefixguard.events.v1.SessionEvent:${EVENT_CONTRACT_VERSION}`,
    });
  });

  it("names each topic's own envelope in ce_dataschema, and the topic in ce_type", () => {
    const usage = { ...saved, type: "UsageRecorded" };
    expect(cloudEventHeaders(Topics.llmUsage, "gateway", usage)).toMatchObject({
      ce_source: "prefix-guard/gateway",
      ce_type: "prefixguard.llm.usage.v1.UsageRecorded",
      ce_dataschema: `urn:prefixguard:proto:prefixguard.events.v1.LlmUsageEvent:${EVENT_CONTRACT_VERSION}`,
    });
    expect(Object.keys(TOPIC_ENVELOPES).sort()).toEqual(Object.values(Topics).sort());
    for (const topic of Object.values(Topics))
      expect(cloudEventDataSchema(topic)).toMatch(
        /^urn:prefixguard:proto:prefixguard\.events\.v1\.[A-Za-z]+Event:\d+$/,
      );
  });

  it("is the same for the same envelope: a relay retry or a DLQ copy sends the same id and time", () => {
    const first = cloudEventHeaders(Topics.promptPrefix, "prompt-assembly", { ...saved, type: "PrefixChanged" });
    const again = cloudEventHeaders(Topics.promptPrefix, "prompt-assembly", { ...saved, type: "PrefixChanged" });
    expect(again).toEqual(first);
  });

  it("leaves ce_subject out when the event has no session", () => {
    expect(
      cloudEventHeaders(Topics.rulesSnapshot, "rules-snapshot", { ...saved, sessionId: "", type: "RulesPinned" }),
    ).not.toHaveProperty("ce_subject");
  });

  it("refuses an envelope it cannot describe rather than send an empty id, a bad time or a bad type", () => {
    const bad = [
      { ...saved, eventId: "" },
      { ...saved, occurredAtMs: Number.NaN },
      { ...saved, occurredAtMs: -1 },
      { ...saved, occurredAtMs: 1.5 },
      { ...saved, occurredAtMs: 253_402_300_800_000 },
      { ...saved, type: "" },
      { ...saved, type: "messageSaved" },
      { ...saved, type: "Message.Saved" },
    ];
    for (const event of bad)
      expect(() => cloudEventHeaders(Topics.sessionEvents, "session-events", event)).toThrow(ValidationError);
    expect(() => cloudEventType(Topics.sessionEvents, "MessageSaved ")).toThrow(/protobuf message name/);
  });
});

describe("cloudEventAttributes", () => {
  it("reads the headers back by the spec's attribute names, ignoring everything else", () => {
    const headers = {
      ...cloudEventHeaders(Topics.cacheCollapse, "cache-monitor", { ...saved, type: "CacheCollapsed" }),
      "pg-event-type": "CacheCollapsed",
      traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    };
    expect(cloudEventAttributes(headers)).toEqual({
      specversion: "1.0",
      id: saved.eventId,
      source: "prefix-guard/cache-monitor",
      type: "prefixguard.cache.collapse.v1.CacheCollapsed",
      time: "2025-01-31T23:59:58.007Z",
      subject: "sess-811",
      datacontenttype: "application/protobuf",
      dataschema: `urn:prefixguard:proto:prefixguard.events.v1.CacheCollapseEvent:${EVENT_CONTRACT_VERSION}`,
    });
    expect(cloudEventAttributes({ "pg-seq": "3" })).toEqual({});
  });
});
