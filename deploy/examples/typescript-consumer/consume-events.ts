// A subscriber of prefix-guard's topics in TypeScript: kafkajs for Kafka, @prefix-guard/client for the
// event types (ts-proto codecs generated from the committed .proto files) and the CloudEvents names.
// Prints one JSON line per event; see README.md next to this file for the options and the output.
//
// What every subscriber must do, and this one shows:
// - deduplicate: delivery is at least once, so an event is applied once by its id (the `ce_id`
//   header, which is the envelope's event_id), and on session.events.v1 also by session + seq;
// - keep per-session order: a session's events are applied at seq 1, 2, 3 ... An event ahead of its
//   turn is held until the missing ones arrive. A session's events all live in one partition, so once
//   that partition has been read to its end without them, the gap is reported and the held events
//   are applied;
// - commit a partition's position only up to what was applied (never past a held event), after the
//   last applied seqs were saved (--state), so a restart neither skips nor misreads anything.
//
// Exit status: 0 at the end with --until-end, on an idle --timeout without it, or on SIGINT/SIGTERM;
// 2 for bad usage; 3 when --timeout passed before the end was reached; 4 for a Kafka error; 6 when a
// gap was reported.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import {
  CacheCollapseEvent,
  CloudEventHeader,
  cloudEventType,
  enumName,
  isSealedEvent,
  LlmUsageEvent,
  PrefixEvent,
  Role,
  SessionEvent,
  SessionKind,
  Topics,
} from "@prefix-guard/client";
import { type EachBatchPayload, Kafka, type KafkaMessage, logLevel } from "kafkajs";

const SUBSCRIBER_TOPICS = [Topics.sessionEvents, Topics.promptPrefix, Topics.llmUsage, Topics.cacheCollapse] as const;
type SubscriberTopic = (typeof SUBSCRIBER_TOPICS)[number];
type Json = string | number | boolean | Json[] | { [key: string]: Json };
type Payload = Record<string, Json>;

/** An event as printed: the envelope's fields, where it was read, its CloudEvents attributes, a summary. */
interface EventLine {
  kind: "event";
  topic: SubscriberTopic;
  session_id: string;
  seq?: number;
  type: string;
  event_id: string;
  occurred_at_ms: number;
  schema_version: number;
  partition: number;
  offset: number;
  [ceAttribute: `ce_${string}`]: string;
  unknown_type?: true;
  payload: Payload;
}
type OutputLine =
  | EventLine
  | {
      kind: "duplicate";
      reason: "event_id" | "seq";
      topic: SubscriberTopic;
      session_id: string;
      seq?: number;
      type: string;
      event_id: string;
      ce_id?: string;
      partition: number;
      offset: number;
    }
  | { kind: "gap"; topic: SubscriberTopic; session_id: string; expected_seq: number; next_seq: number };

// ---- decoding -------------------------------------------------------------------------------------

const snake = (name: string) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
/** Characters as Python and Java count them (code points), not UTF-16 units. */
const chars = (text: string) => [...text].length;

function summarizeSession(event: SessionEvent): Payload {
  const payload = event.payload;
  const sealed = isSealedEvent(event);
  switch (payload?.$case) {
    case "sessionCreated": {
      const p = payload.value;
      return {
        owner: p.owner,
        workspace: p.workspace,
        timezone: p.timezone,
        kind: enumName(SessionKind, p.kind),
        parent_session_id: p.parentSessionId,
        inherited_summary_from: p.inheritedSummaryFrom,
        ...(sealed ? { sealed } : {}),
      };
    }
    case "messageSaved": {
      const p = payload.value;
      // Sealed content (schema 2) is not read here: createDataKeyClient + openSealedEvent would open it.
      if (sealed)
        return {
          sealed,
          message_id: p.messageId,
          role: enumName(Role, p.role),
          thinking_chars: p.thinkingChars,
          local_date: p.localDate,
        };
      const parts = p.content.flatMap((part) => (part.part === undefined ? [] : [part.part]));
      return {
        message_id: p.messageId,
        role: enumName(Role, p.role),
        parts: parts.map((part) => snake(part.$case)),
        text_chars: parts.reduce((sum, part) => sum + (part.$case === "text" ? chars(part.value.text) : 0), 0),
        tools_called: parts.flatMap((part) => (part.$case === "toolCall" ? [part.value.name] : [])),
        thinking_chars: p.thinkingChars,
        local_date: p.localDate,
      };
    }
    case "messageDeleted":
      return { message_id: payload.value.messageId };
    case "compactionCommitted": {
      const p = payload.value;
      if (sealed) return { sealed, generation: p.generation, boundary_message_id: p.boundaryMessageId };
      return { generation: p.generation, boundary_message_id: p.boundaryMessageId, summary_chars: chars(p.summary) };
    }
    case "sideTaskPromoted":
      return { parent_session_id: payload.value.parentSessionId };
    case "sessionDeleted":
    case undefined:
      return {};
  }
}

function summarizePrefix(event: PrefixEvent): Payload {
  const payload = event.payload;
  if (payload?.$case === "observed") {
    const p = payload.value;
    return {
      request_id: event.requestId,
      model: p.model,
      messages: p.messages,
      first_build: p.firstBuild,
      rules_decision: p.rulesDecision,
      estimated_tokens: p.estimatedTokens,
    };
  }
  if (payload?.$case === "changed") {
    const p = payload.value;
    return {
      request_id: event.requestId,
      cause: p.cause,
      changed_sections: p.changedSections,
      tools_changed: p.toolsChanged,
      history_rewritten: p.historyRewritten,
      messages: p.messages,
    };
  }
  return {};
}

function summarizeUsage(event: LlmUsageEvent): Payload {
  const p = event.payload?.value;
  if (p === undefined) return {};
  return {
    request_id: p.requestId,
    model: p.model,
    provider: p.provider,
    prompt_tokens: p.promptTokens,
    cached_tokens: p.cachedTokens,
    completion_tokens: p.completionTokens,
    cache_creation_tokens: p.cacheCreationTokens,
  };
}

function summarizeCollapse(event: CacheCollapseEvent): Payload {
  const p = event.payload?.value;
  if (p === undefined) return {};
  return {
    request_id: p.requestId,
    model: p.model,
    cached_ratio: p.cachedRatio,
    baseline_ratio: p.baselineRatio,
    cause_code: p.causeCode,
    changed_sections: p.changedSections,
    extra_cost: p.extraCost,
  };
}

/** The envelope fields every topic's message has. */
interface Envelope {
  eventId: string;
  sessionId: string;
  occurredAtMs: number;
  schemaVersion: number;
  type: string;
  payload?: { $case: string } | undefined;
  seq?: number;
}

interface TopicReader {
  decode(bytes: Uint8Array): Envelope;
  /** Oneof case → the envelope's `type`, as the producers write it. */
  readonly typeNames: Readonly<Record<string, string>>;
  readonly schemaVersions: readonly number[];
  summarize(event: Envelope): Payload;
}

function reader<T extends Envelope>(
  codec: { decode(bytes: Uint8Array): T },
  typeNames: Record<NonNullable<T["payload"]>["$case"], string>,
  schemaVersions: readonly number[],
  summarize: (event: T) => Payload,
): TopicReader {
  return {
    decode: (bytes) => codec.decode(bytes),
    typeNames,
    schemaVersions,
    summarize: (event) => summarize(event as T),
  };
}

// Session events: schema 1 has content in plaintext fields, 2 seals it.
const READERS: Readonly<Record<SubscriberTopic, TopicReader>> = {
  [Topics.sessionEvents]: reader(
    SessionEvent,
    {
      sessionCreated: "SessionCreated",
      messageSaved: "MessageSaved",
      messageDeleted: "MessageDeleted",
      compactionCommitted: "CompactionCommitted",
      sessionDeleted: "SessionDeleted",
      sideTaskPromoted: "SideTaskPromoted",
    },
    [1, 2],
    summarizeSession,
  ),
  [Topics.promptPrefix]: reader(
    PrefixEvent,
    { observed: "FingerprintObserved", changed: "PrefixChanged" },
    [1],
    summarizePrefix,
  ),
  [Topics.llmUsage]: reader(LlmUsageEvent, { usage: "UsageRecorded" }, [1], summarizeUsage),
  [Topics.cacheCollapse]: reader(CacheCollapseEvent, { collapsed: "CacheCollapsed" }, [1], summarizeCollapse),
};

const CE_HEADERS = [
  CloudEventHeader.id,
  CloudEventHeader.type,
  CloudEventHeader.source,
  CloudEventHeader.subject,
  CloudEventHeader.time,
  CloudEventHeader.specVersion,
  CloudEventHeader.dataSchema,
];

function skip(where: string, why: string): undefined {
  process.stderr.write(`skipping ${where}: ${why}\n`);
  return undefined;
}

/** The line for one record of `topic` (its name without --topic-prefix), or undefined when it is not a usable event. */
function describe(topic: SubscriberTopic, partition: number, message: KafkaMessage): EventLine | undefined {
  const where = `${topic}[${partition}]@${message.offset}`;
  const read = READERS[topic];
  let event: Envelope;
  try {
    event = read.decode(message.value ?? new Uint8Array());
  } catch (error) {
    // The TypeScript services send these to the DLQ.
    return skip(where, `undecodable: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!read.schemaVersions.includes(event.schemaVersion))
    return skip(where, `unknown schema_version ${event.schemaVersion}`);
  if (event.eventId === "" || event.sessionId === "") return skip(where, "no event_id or session_id");
  // A payload this code does not know (a newer producer's event type: no payload with older generated
  // types, a case not in READERS with newer ones) is printed as an unknown type and otherwise
  // ignored, and its seq still counts.
  const knownCase = event.payload !== undefined && Object.hasOwn(read.typeNames, event.payload.$case);
  const unknownType = !knownCase && !Object.values(read.typeNames).includes(event.type);
  if (!unknownType && read.typeNames[event.payload?.$case ?? ""] !== event.type)
    return skip(where, `type ${JSON.stringify(event.type)} does not match payload ${event.payload?.$case}`);
  const ce: Record<string, string> = {};
  for (const name of CE_HEADERS) {
    const value = message.headers?.[name];
    if (value !== undefined) ce[name] = value.toString();
  }
  // Records written before the CloudEvents headers carry none; when present they must agree with the envelope.
  if (ce.ce_id !== undefined && ce.ce_id !== event.eventId)
    return skip(where, `ce_id ${ce.ce_id} is not the event_id ${event.eventId}`);
  if (ce.ce_type !== undefined && ce.ce_type !== cloudEventType(topic, event.type))
    return skip(where, `ce_type ${ce.ce_type} does not name ${topic} ${event.type}`);
  return {
    kind: "event",
    topic,
    session_id: event.sessionId,
    ...(topic === Topics.sessionEvents ? { seq: event.seq ?? 0 } : {}),
    type: event.type,
    event_id: event.eventId,
    occurred_at_ms: event.occurredAtMs,
    schema_version: event.schemaVersion,
    partition,
    offset: Number(message.offset),
    ...ce,
    ...(unknownType ? { unknown_type: true as const } : {}),
    payload: unknownType ? {} : read.summarize(event),
  };
}

// ---- order and deduplication ------------------------------------------------------------------------

/** A partition, as `<topic>/<partition>`. */
type Where = string;

/**
 * Deduplication by event id (and session + seq) and per-session order. `last` is the last applied
 * seq per session; an event ahead of its turn is held, with where it was read, until the seqs before
 * it arrive or its partition has been read to the end (flush), which reports the gap.
 */
class EventOrder {
  readonly last: Map<string, number>;
  private readonly held = new Map<string, Map<number, { line: EventLine; where: Where }>>();
  private readonly seen = new Set<string>();
  gaps = 0;
  changed = false;

  constructor(last: Map<string, number>) {
    this.last = last;
  }

  private static idOf(line: EventLine): string {
    return line.ce_id ?? line.event_id;
  }

  /** The lines to print for one usable event read at `where`, in order. */
  offer(line: EventLine, where: Where): OutputLine[] {
    const id = EventOrder.idOf(line);
    if (this.seen.has(id)) return [duplicate(line, "event_id")];
    if (line.topic !== Topics.sessionEvents || line.seq === undefined) {
      this.seen.add(id);
      return [line];
    }
    const session = line.session_id;
    const held = this.held.get(session) ?? new Map();
    if (line.seq <= (this.last.get(session) ?? 0) || held.has(line.seq)) return [duplicate(line, "seq")];
    this.seen.add(id);
    held.set(line.seq, { line, where });
    this.held.set(session, held);
    return this.applyNext(session);
  }

  /** Applies the held events of `session` that are next in line. */
  private applyNext(session: string): OutputLine[] {
    const out: OutputLine[] = [];
    const held = this.held.get(session);
    if (held === undefined) return out;
    for (let next = (this.last.get(session) ?? 0) + 1; held.has(next); next++) {
      const entry = held.get(next);
      held.delete(next);
      if (entry !== undefined) out.push(entry.line);
      this.last.set(session, next);
      this.changed = true;
    }
    if (held.size === 0) this.held.delete(session);
    return out;
  }

  /** The partition was read to its end: what its sessions still wait for is not coming. */
  flush(where: Where): OutputLine[] {
    const out: OutputLine[] = [];
    for (const [session, held] of [...this.held]) {
      if (![...held.values()].some((entry) => entry.where === where)) continue;
      while (this.held.has(session)) {
        const nextSeq = Math.min(...held.keys());
        out.push({
          kind: "gap",
          topic: Topics.sessionEvents,
          session_id: session,
          expected_seq: (this.last.get(session) ?? 0) + 1,
          next_seq: nextSeq,
        });
        this.gaps++;
        this.last.set(session, nextSeq - 1);
        out.push(...this.applyNext(session));
      }
    }
    return out;
  }

  /** The partition was taken away (a rebalance): forget what was held from it; it is read again. */
  drop(where: Where): void {
    for (const [session, held] of [...this.held]) {
      for (const [seq, entry] of [...held])
        if (entry.where === where) {
          held.delete(seq);
          this.seen.delete(EventOrder.idOf(entry.line));
        }
      if (held.size === 0) this.held.delete(session);
    }
  }

  lowestHeldOffset(where: Where): number | undefined {
    let lowest: number | undefined;
    for (const held of this.held.values())
      for (const entry of held.values())
        if (entry.where === where && (lowest === undefined || entry.line.offset < lowest)) lowest = entry.line.offset;
    return lowest;
  }
}

function duplicate(line: EventLine, reason: "event_id" | "seq"): OutputLine {
  return {
    kind: "duplicate",
    reason,
    topic: line.topic,
    session_id: line.session_id,
    ...(line.seq === undefined ? {} : { seq: line.seq }),
    type: line.type,
    event_id: line.event_id,
    ...(line.ce_id === undefined ? {} : { ce_id: line.ce_id }),
    partition: line.partition,
    offset: line.offset,
  };
}

/** Last applied seq per session, one `<seq> <session id>` line each; no file yet is an empty state. */
function loadState(path: string | undefined): Map<string, number> {
  const last = new Map<string, number>();
  if (path === undefined || !existsSync(path)) return last;
  readFileSync(path, "utf8")
    .split("\n")
    .forEach((text, index) => {
      if (text === "") return;
      const match = /^(\d+) (.+)$/.exec(text);
      if (match?.[1] === undefined || match[2] === undefined)
        throw new Error(`${path}:${index + 1}: expected '<seq> <session id>', got ${JSON.stringify(text)}`);
      last.set(match[2], Number(match[1]));
    });
  return last;
}

/** Written whole and renamed into place, before positions are committed, so it is never behind them. */
function saveState(path: string, last: ReadonlyMap<string, number>): void {
  const lines = [...last]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([session, seq]) => `${seq} ${session}\n`);
  writeFileSync(`${path}.tmp`, lines.join(""));
  renameSync(`${path}.tmp`, path);
}

// ---- the consumer -------------------------------------------------------------------------------

const USAGE =
  "usage: consume-events.ts [--bootstrap host:port,...] [--topics t1,t2] [--topic-prefix P] [--group G] [--state FILE] [--until-end] [--timeout S]";

function options() {
  try {
    const { values } = parseArgs({
      options: {
        bootstrap: { type: "string", default: process.env.KAFKA_BROKERS ?? "127.0.0.1:9092" },
        topics: { type: "string", default: SUBSCRIBER_TOPICS.join(",") },
        "topic-prefix": { type: "string", default: "" },
        group: { type: "string", default: "typescript-prefix-guard-example" },
        state: { type: "string" },
        "until-end": { type: "boolean", default: false },
        timeout: { type: "string", default: "0" },
      },
    });
    const topics = values.topics.split(",").map((topic) => topic.trim());
    const unknown = topics.filter((topic) => !(SUBSCRIBER_TOPICS as readonly string[]).includes(topic));
    if (unknown.length > 0 || topics.length === 0)
      throw new Error(`--topics: unknown ${unknown.join(", ")}; known: ${SUBSCRIBER_TOPICS.join(", ")}`);
    const timeoutSeconds = Number(values.timeout);
    if (!Number.isFinite(timeoutSeconds) || timeoutSeconds < 0) throw new Error("--timeout must be seconds >= 0");
    return { ...values, topics: topics as SubscriberTopic[], timeoutSeconds };
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${USAGE}\n`);
    process.exit(2);
  }
}

async function main(): Promise<number> {
  const args = options();
  let order: EventOrder;
  try {
    order = new EventOrder(loadState(args.state));
  } catch (error) {
    process.stderr.write(`--state: ${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  const logical = new Map<string, SubscriberTopic>(args.topics.map((topic) => [args["topic-prefix"] + topic, topic]));
  const kafka = new Kafka({
    clientId: args.group,
    brokers: args.bootstrap.split(","),
    logLevel: logLevel.ERROR,
    // kafkajs logs to stdout by default; stdout is for the JSON lines only.
    logCreator: () => (entry) => process.stderr.write(`kafkajs: ${entry.log.message}\n`),
  });

  // --until-end: the end offset of every partition when the consumer starts, and where the group
  // starts reading it (its committed position, or the partition's start).
  const remaining = new Map<Where, number>();
  const admin = kafka.admin();
  await admin.connect();
  try {
    const committed = await admin.fetchOffsets({ groupId: args.group, topics: [...logical.keys()] });
    for (const topic of logical.keys()) {
      const ends = await admin.fetchTopicOffsets(topic);
      const starts = committed.find((entry) => entry.topic === topic)?.partitions ?? [];
      for (const { partition, high, low } of ends) {
        const start = Number(starts.find((entry) => entry.partition === partition)?.offset ?? "-1");
        if (Number(high) > Math.max(start, Number(low))) remaining.set(`${topic}/${partition}`, Number(high));
      }
    }
  } finally {
    await admin.disconnect();
  }

  const consumer = kafka.consumer({ groupId: args.group });
  const nextOffset = new Map<Where, number>();
  const emit = (lines: readonly OutputLine[]) => {
    for (const line of lines) process.stdout.write(`${JSON.stringify(line)}\n`);
  };
  let stopping = false;
  let finish: (status: number) => void = () => {};
  const finished = new Promise<number>((resolve) => {
    finish = (status) => {
      stopping = true;
      resolve(status);
    };
  });
  let lastMessageAt = Date.now();

  const commit = async (topic: string, partition: number) => {
    const where = `${topic}/${partition}`;
    const position = order.lowestHeldOffset(where) ?? nextOffset.get(where);
    if (position === undefined) return;
    if (args.state !== undefined && order.changed) {
      saveState(args.state, order.last);
      order.changed = false;
    }
    await consumer.commitOffsets([{ topic, partition, offset: String(position) }]);
  };

  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    const assigned = new Set(
      Object.entries(payload.memberAssignment).flatMap(([topic, partitions]) => partitions.map((p) => `${topic}/${p}`)),
    );
    for (const where of nextOffset.keys()) if (!assigned.has(where)) order.drop(where);
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    process.stderr.write(`kafka error: ${payload.error.message}\n`);
    if (!payload.restart) finish(4);
  });

  await consumer.connect();
  await consumer.subscribe({ topics: [...logical.keys()], fromBeginning: true });
  const onBatch = async ({ batch }: EachBatchPayload) => {
    // After the end was reached, later records are left for the next run (nothing is committed for them).
    if (stopping) return;
    lastMessageAt = Date.now();
    const topic = logical.get(batch.topic);
    if (topic === undefined) return;
    const where = `${batch.topic}/${batch.partition}`;
    for (const message of batch.messages) {
      const line = describe(topic, batch.partition, message);
      if (line !== undefined) emit(order.offer(line, where));
      nextOffset.set(where, Number(message.offset) + 1);
    }
    const next = nextOffset.get(where) ?? 0;
    // A session's events all live in one partition: read to its end, what a session waits for is not coming.
    if (next >= Number(batch.highWatermark)) emit(order.flush(where));
    await commit(batch.topic, batch.partition);
    if ((remaining.get(where) ?? Number.POSITIVE_INFINITY) <= next) remaining.delete(where);
    if (args["until-end"] && remaining.size === 0) finish(0);
  };
  if (args["until-end"] && remaining.size === 0) finish(0);
  // Positions are committed by `commit`, never past a held event; kafkajs's own commits would pass them.
  else await consumer.run({ autoCommit: false, eachBatch: onBatch });

  const idle = setInterval(() => {
    if (args.timeoutSeconds > 0 && Date.now() - lastMessageAt > args.timeoutSeconds * 1000) {
      if (args["until-end"]) process.stderr.write(`timed out after ${args.timeoutSeconds}s idle before the end\n`);
      finish(args["until-end"] ? 3 : 0);
    }
  }, 200);
  process.once("SIGINT", () => finish(0));
  process.once("SIGTERM", () => finish(0));
  const status = await finished;
  clearInterval(idle);
  await consumer.disconnect();
  return status === 0 && order.gaps > 0 ? 6 : status;
}

process.exitCode = await main().catch((error: unknown) => {
  process.stderr.write(`kafka error: ${error instanceof Error ? error.message : String(error)}\n`);
  return 4;
});
