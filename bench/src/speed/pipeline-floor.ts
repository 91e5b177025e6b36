// The event pipeline's floor, run against the real pipeline in the same bench run: the least any
// design pays per event to make it durable, publish it and apply it downstream. The write side
// (pipeline-floor-server.ts) serves SessionEvents/SaveMessage on a bare @grpc/grpc-js server, writes
// each message as a MessageSaved event with group commit and produces it with libs/bus's Kafka
// producer; the read side (pipeline-floor-consumer.ts) consumes with libs/bus's consumer, decodes
// each record and upserts one row per session. What it leaves out (validation, quotas, session rows,
// the outbox and its relay lease, sealing, the projections' message rows, the second consumer) is
// what the comparison prices. Shared here: the event, the settings taken from the services, and
// the bus.
import { createKafkaBus, type KafkaBusOptions, type MessageBus } from "@prefix-guard/bus";
import { decodeSessionEvent, encodeSessionEvent, SESSION_EVENT_SCHEMA_VERSION } from "@prefix-guard/events";
import { SealedFields } from "@prefix-guard/proto/events/v1/session_events";
import type { SaveMessageRequest } from "@prefix-guard/proto/sessionevents/v1/session_events_service";

/** What the services give session.events.v1 (libs/runtime defaultTopicSpecs). */
export const FLOOR_TOPIC_PARTITIONS = 6;
/**
 * The services' consumer defaults: runEventConsumer's maxBatchEvents, ServiceKit's
 * CONSUMER_PARTITIONS_CONCURRENTLY and CONSUMER_COMMIT_INTERVAL_MS.
 */
export const FLOOR_CONSUMER = { maxBatchMessages: 500, partitionsConcurrently: 3, commitIntervalMs: 1_000 } as const;
/** Most messages one INSERT carries: session-events' own group cap (MessageAppendGroups). */
export const FLOOR_GROUP_MAX = 128;
export const FLOOR_EVENT_TABLE = "floor_event";
/** Same columns as prompt-assembly's pa_session that the bench polls: session_id, last_seq. */
export const FLOOR_PROJECTION_TABLE = "floor_projection";

// A data key id is a UUID and a seal's nonce 12 bytes and its tag 16 (libs/events sealed-content.ts).
const STAND_IN_KEY_ID = "00000000-0000-4000-8000-000000000000";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * The MessageSaved event the real service would write for `request`, byte for byte the same size:
 * its seal carries the encoded content plus a tag's worth of bytes, not encrypted, because the
 * floor pays for moving the bytes, not for crypto-shredding them.
 */
export function floorEvent(
  request: SaveMessageRequest,
  seq: number,
  occurredAtMs: number,
  newId: (nowMs: number) => string,
): Uint8Array {
  const sealedFields = SealedFields.encode(SealedFields.fromPartial({ content: request.content })).finish();
  return encodeSessionEvent({
    eventId: newId(occurredAtMs),
    sessionId: request.sessionId,
    seq,
    occurredAtMs,
    schemaVersion: SESSION_EVENT_SCHEMA_VERSION,
    type: "MessageSaved",
    payload: {
      $case: "messageSaved",
      value: {
        messageId: newId(occurredAtMs),
        role: request.role,
        content: [],
        thinkingChars: request.thinkingText.length,
        localDate: utcDate(occurredAtMs),
        sealed: {
          keyId: STAND_IN_KEY_ID,
          nonce: Buffer.alloc(NONCE_BYTES),
          ciphertext: Buffer.concat([sealedFields, Buffer.alloc(TAG_BYTES)]),
        },
      },
    },
  });
}

/** YYYY-MM-DD in UTC: the floor keeps no session timezone. */
export function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Decodes every record (as the services' consumers do) and keeps the highest seq of each session. */
export function latestSeqs(records: readonly Uint8Array[]): Map<string, number> {
  const latest = new Map<string, number>();
  for (const record of records) {
    const event = decodeSessionEvent(record);
    latest.set(event.sessionId, Math.max(event.seq, latest.get(event.sessionId) ?? 0));
  }
  return latest;
}

// The bench has no logging package: what kafkajs reports goes to the process's log file.
const stderrLine = (fields: unknown, message?: string) => {
  let detail = "";
  try {
    detail = JSON.stringify(fields);
  } catch {
    detail = String(fields);
  }
  process.stderr.write(`${message ?? ""} ${detail}\n`);
};
const busLogger = {
  error: stderrLine,
  warn: stderrLine,
  debug: () => undefined,
} as unknown as KafkaBusOptions["logger"];

/** libs/bus's Kafka adapter with the services' defaults (runtime openBus passes no tuning either). */
export function openFloorBus(brokers: string, clientId: string): MessageBus {
  return createKafkaBus({ brokers: brokers.split(","), clientId, logger: busLogger });
}

export function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`${name} is required`);
  return value;
}
