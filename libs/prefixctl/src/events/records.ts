// One record of a topic as `prefixctl events tail` prints it: decoded with the generated code of the
// envelope its topic carries, with the CloudEvents attributes from its headers and, on a DLQ, why it
// is there. Pure: bytes in, text or JSON out. A record that does not decode is printed with the
// error instead of its event (a tail shows what is on the topic; it never stops at a bad record).

import { type CloudEventAttributes, cloudEventAttributes, type TopicName, Topics } from "@prefix-guard/events";
import { CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
import { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import { RulesSnapshotEvent } from "@prefix-guard/proto/events/v1/rules_events";
import { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { LlmUsageEvent } from "@prefix-guard/proto/events/v1/usage_events";
import { cut, type Layout, TERMINAL_COLUMNS } from "../format/table";

export interface TailRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: string;
  readonly value: Uint8Array;
  readonly headers: Readonly<Record<string, string>>;
}

interface EnvelopeJson {
  decode(bytes: Uint8Array): unknown;
  toJSON(message: never): unknown;
}

const ENVELOPES: Readonly<Record<TopicName, EnvelopeJson>> = {
  [Topics.sessionEvents]: SessionEvent,
  [Topics.rulesSnapshot]: RulesSnapshotEvent,
  [Topics.promptPrefix]: PrefixEvent,
  [Topics.llmUsage]: LlmUsageEvent,
  [Topics.cacheCollapse]: CacheCollapseEvent,
};

/** The main topic of a topic or of its DLQ (whose records are the original's bytes). */
function envelopeTopicOf(topic: string): TopicName | undefined {
  const main = topic.endsWith(".dlq") ? topic.slice(0, -".dlq".length) : topic;
  return (Object.values(Topics) as string[]).includes(main) ? (main as TopicName) : undefined;
}

export interface TailRecordJson {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: string;
  /** CloudEvents attributes by their spec names (ce_id → id, content-type → datacontenttype). */
  readonly ce: CloudEventAttributes;
  readonly dlq_reason?: string;
  readonly dlq_error?: string;
  /** The envelope as protobuf's JSON mapping (ts-proto toJSON). */
  readonly event?: unknown;
  readonly decode_error?: string;
}

export function tailRecordToJson(record: TailRecord): TailRecordJson {
  const dlqReason = record.headers["pg-dlq-reason"];
  const dlqError = record.headers["pg-dlq-error"];
  const base = {
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    key: record.key,
    ce: cloudEventAttributes(record.headers),
    ...(dlqReason === undefined ? {} : { dlq_reason: dlqReason }),
    ...(dlqError === undefined ? {} : { dlq_error: dlqError }),
  };
  const topic = envelopeTopicOf(record.topic);
  if (topic === undefined) return { ...base, decode_error: `no envelope is known for topic ${record.topic}` };
  const envelope = ENVELOPES[topic];
  try {
    return { ...base, event: envelope.toJSON(envelope.decode(record.value) as never) };
  } catch (error) {
    return { ...base, decode_error: `undecodable ${topic} record: ${(error as Error).message}` };
  }
}

/** The event's name: from ce_type, else pg-event-type, else the decoded envelope's type. */
function eventName(json: TailRecordJson, headers: Readonly<Record<string, string>>): string {
  const fromType = json.ce.type?.split(".").at(-1);
  if (fromType !== undefined && fromType !== "") return fromType;
  const event = json.event as { type?: unknown } | undefined;
  return headers["pg-event-type"] ?? (typeof event?.type === "string" ? event.type : "?");
}

/** The envelope's payload (its one oneof member), the part worth a second line. */
function payloadOf(event: unknown): unknown {
  if (typeof event !== "object" || event === null) return event;
  const envelopeFields = new Set(["eventId", "sessionId", "seq", "occurredAtMs", "schemaVersion", "type", "requestId"]);
  const payload = Object.entries(event).find(([field]) => !envelopeFields.has(field));
  return payload === undefined ? {} : payload[1];
}

/**
 * Two lines per record: when, where, what (seq, DLQ reason) and its ce_id; then the session and the
 * payload as JSON, indented. Both fit 120 columns unless the layout is wide (the session id, up to
 * 128 characters, is on the second line so a cut never takes the id).
 */
export function formatTailRecord(record: TailRecord, layout: Layout): string {
  const json = tailRecordToJson(record);
  const event = json.event as { seq?: number; occurredAtMs?: number } | undefined;
  // A record written before the CloudEvents headers has no ce_time; its envelope still has the time.
  const time = json.ce.time ?? (event?.occurredAtMs === undefined ? "-" : new Date(event.occurredAtMs).toISOString());
  const head = [
    time,
    `${record.topic}[${record.partition}]@${record.offset}`,
    eventName(json, record.headers),
    ...(event?.seq === undefined ? [] : [`seq=${event.seq}`]),
    ...(json.dlq_reason === undefined ? [] : [`dlq=${json.dlq_reason}`]),
    `id=${json.ce.id ?? "-"}`,
  ];
  const detail = json.decode_error ?? JSON.stringify(payloadOf(json.event));
  const fit = (text: string) => (layout.wide ? text : cut(text, TERMINAL_COLUMNS));
  return `${fit(head.join("  "))}\n${fit(`    session ${record.key === "" ? "-" : record.key}  ${detail}`)}\n`;
}
