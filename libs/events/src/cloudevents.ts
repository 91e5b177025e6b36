// CloudEvents 1.0 over Kafka, binary content mode (the Kafka protocol binding): the record's value
// stays the protobuf envelope it always was, and the event's attributes travel as `ce_*` headers
// next to our own `pg-*` ones. A subscriber that knows only CloudEvents can route on `ce_type` and
// deduplicate on `ce_id` without decoding a byte of protobuf. Every producer builds its headers
// here, so the attributes mean the same on every topic.

import { ValidationError } from "@prefix-guard/errors";
import type { TopicName } from "./topics";

export const CLOUDEVENTS_SPEC_VERSION = "1.0";

/** `content-type` of every record (the binding's datacontenttype): the value is a protobuf message. */
export const EVENT_CONTENT_TYPE = "application/protobuf";

/**
 * The released contract the envelopes belong to (CHANGELOG.md "contract N"): part of every
 * `ce_dataschema`, so a schema registry can tell which baseline a record was written against.
 * Raised when a new contract is released; within one topic version fields are only added.
 */
export const EVENT_CONTRACT_VERSION = 2;

/** The envelope message each topic carries (its full protobuf name); the DLQ of a topic carries the same. */
export const TOPIC_ENVELOPES: Readonly<Record<TopicName, string>> = {
  "session.events.v1": "prefixguard.events.v1.SessionEvent",
  "rules.snapshot.v1": "prefixguard.events.v1.RulesSnapshotEvent",
  "prompt.prefix.v1": "prefixguard.events.v1.PrefixEvent",
  "llm.usage.v1": "prefixguard.events.v1.LlmUsageEvent",
  "cache.collapse.v1": "prefixguard.events.v1.CacheCollapseEvent",
};

/** The services that publish, as `ce_source` names them (`prefix-guard/<service>`). */
export type EventProducer = "session-events" | "rules-snapshot" | "prompt-assembly" | "cache-monitor" | "gateway";

/** The envelope fields every topic's message has; a ts-proto envelope is one as it is. */
export interface CloudEventSubject {
  readonly eventId: string;
  readonly sessionId: string;
  readonly occurredAtMs: number;
  /** The envelope's `type`: its payload message's name (MessageSaved, UsageRecorded, ...). */
  readonly type: string;
}

/** The header names, for readers (a subscriber in TypeScript, prefixctl events tail, tests). */
export const CloudEventHeader = {
  specVersion: "ce_specversion",
  id: "ce_id",
  source: "ce_source",
  type: "ce_type",
  time: "ce_time",
  subject: "ce_subject",
  dataSchema: "ce_dataschema",
  contentType: "content-type",
} as const;

const eventTypeName = /^[A-Z][A-Za-z0-9]*$/;

/** `prefixguard.<topic>.<EventName>`, e.g. `prefixguard.session.events.v1.MessageSaved`. */
export function cloudEventType(topic: TopicName, eventType: string): string {
  if (!eventTypeName.test(eventType))
    throw new ValidationError("type", `event type must be a protobuf message name, got ${JSON.stringify(eventType)}`);
  return `prefixguard.${topic}.${eventType}`;
}

/** `urn:prefixguard:proto:<envelope full name>:<contract version>`: an absolute URI, as the spec asks. */
export function cloudEventDataSchema(topic: TopicName): string {
  return `urn:prefixguard:proto:${TOPIC_ENVELOPES[topic]}:${EVENT_CONTRACT_VERSION}`;
}

/**
 * The `ce_*` headers and `content-type` of one record. Built from the envelope as it is written
 * (the id and time are the event's own), so a relay that publishes the same row twice, or a
 * DLQ that re-publishes it, sends the same attributes. A record without an id or a time would
 * defeat deduplication, so those are refused rather than sent empty.
 */
export function cloudEventHeaders(
  topic: TopicName,
  producer: EventProducer,
  event: CloudEventSubject,
): Record<string, string> {
  if (event.eventId.length === 0) throw new ValidationError("event_id", "must not be empty (it is ce_id)");
  if (!Number.isSafeInteger(event.occurredAtMs) || event.occurredAtMs < 0 || event.occurredAtMs > MAX_TIME_MS)
    throw new ValidationError("occurred_at_ms", `must be a time in UTC ms (it is ce_time), got ${event.occurredAtMs}`);
  return {
    [CloudEventHeader.specVersion]: CLOUDEVENTS_SPEC_VERSION,
    [CloudEventHeader.id]: event.eventId,
    [CloudEventHeader.source]: `prefix-guard/${producer}`,
    [CloudEventHeader.type]: cloudEventType(topic, event.type),
    // RFC 3339 in UTC with milliseconds, the precision the envelope keeps.
    [CloudEventHeader.time]: new Date(event.occurredAtMs).toISOString(),
    ...(event.sessionId.length > 0 ? { [CloudEventHeader.subject]: event.sessionId } : {}),
    [CloudEventHeader.contentType]: EVENT_CONTENT_TYPE,
    [CloudEventHeader.dataSchema]: cloudEventDataSchema(topic),
  };
}

/** 9999-12-31T23:59:59.999Z: the last instant RFC 3339's four-digit year can write. */
const MAX_TIME_MS = 253_402_300_799_999;

/** The CloudEvents attributes of a received record, by their spec names; absent ones are left out. */
export interface CloudEventAttributes {
  readonly specversion?: string;
  readonly id?: string;
  readonly source?: string;
  readonly type?: string;
  readonly time?: string;
  readonly subject?: string;
  readonly datacontenttype?: string;
  readonly dataschema?: string;
}

/** Reads the binding's headers back into attributes (what `prefixctl events tail` prints). */
export function cloudEventAttributes(headers: Readonly<Record<string, string>>): CloudEventAttributes {
  const attributes: Record<string, string> = {};
  const names: ReadonlyArray<readonly [keyof CloudEventAttributes, string]> = [
    ["specversion", CloudEventHeader.specVersion],
    ["id", CloudEventHeader.id],
    ["source", CloudEventHeader.source],
    ["type", CloudEventHeader.type],
    ["time", CloudEventHeader.time],
    ["subject", CloudEventHeader.subject],
    ["datacontenttype", CloudEventHeader.contentType],
    ["dataschema", CloudEventHeader.dataSchema],
  ];
  for (const [attribute, header] of names) {
    const value = headers[header];
    if (value !== undefined) attributes[attribute] = value;
  }
  return attributes;
}
