// What the example consumers (deploy/examples/{typescript,python,java}-consumer) are checked against:
// one run's events on all four subscriber topics, published to the real test broker under a fresh
// topic prefix with the headers the producers write (ce_* and pg-*), including redeliveries and a
// session delivered out of order; a second run with a seq missing; and the checks every consumer's
// JSON lines must pass. The consumers share one output contract, so one driver checks all three.

import { spawn } from "node:child_process";
import type { MessageBus, OutgoingMessage } from "@prefix-guard/bus";
import { testKafkaBrokers, uniqueName } from "@prefix-guard/bus/testing";
import {
  cloudEventHeaders,
  type EventProducer,
  encodeEnvelope,
  encodeSessionEvent,
  newDataKey,
  newEventId,
  sealFields,
  type TopicName,
  Topics,
} from "@prefix-guard/events";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import { CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
import { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { LlmUsageEvent } from "@prefix-guard/proto/events/v1/usage_events";
import { expect } from "vitest";
import { repoRoot } from "./support";

/** The topics a subscriber reads, in the order the consumers take them. */
export const SUBSCRIBER_TOPICS = [Topics.sessionEvents, Topics.promptPrefix, Topics.llmUsage, Topics.cacheCollapse];
type SubscriberTopic = (typeof SUBSCRIBER_TOPICS)[number];

/** One JSON line of a consumer, as all three print it. */
export type ConsumerLine =
  | {
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
      ce_id?: string;
      ce_type?: string;
      ce_source?: string;
      ce_subject?: string;
      ce_time?: string;
      ce_specversion?: string;
      ce_dataschema?: string;
      unknown_type?: boolean;
      payload: Record<string, unknown>;
    }
  | {
      kind: "duplicate";
      reason: "event_id" | "seq";
      topic: SubscriberTopic;
      session_id: string;
      seq?: number;
      type: string;
      event_id: string;
      ce_id?: string;
    }
  | { kind: "gap"; topic: SubscriberTopic; session_id: string; expected_seq: number; next_seq: number };
export type EventLine = Extract<ConsumerLine, { kind: "event" }>;

export interface ConsumerRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly lines: ConsumerLine[];
}

/** Runs a consumer to its exit; its stdout must be JSON lines only. */
export function runConsumer(
  command: string,
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  timeoutMs = 90_000,
): Promise<ConsumerRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${command} did not exit in ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.once("error", reject);
    child.once("exit", (code) => {
      clearTimeout(timer);
      try {
        const lines = stdout
          .split("\n")
          .filter((line) => line.trim().length > 0)
          .map((line) => JSON.parse(line) as ConsumerLine);
        resolve({ code, stdout, stderr, lines });
      } catch (error) {
        reject(
          new Error(`${command} printed a line that is not JSON (${error})\nstdout:\n${stdout}\nstderr:\n${stderr}`),
        );
      }
    });
  });
}

/** The options every consumer takes for a run under `prefix`: read all four topics to their end. */
export function consumerArgs(prefix: string, group: string, state?: string): string[] {
  return [
    "--bootstrap",
    testKafkaBrokers.join(","),
    "--topic-prefix",
    prefix,
    "--group",
    group,
    "--until-end",
    "--timeout",
    "60",
    ...(state === undefined ? [] : ["--state", state]),
  ];
}

interface Published {
  readonly topic: SubscriberTopic;
  readonly eventId: string;
  readonly sessionId: string;
  readonly type: string;
  readonly seq?: number;
}

/** What was published under one prefix, for the checks. */
export interface PublishedRun {
  readonly prefix: string;
  /** Every distinct event, in publish order. */
  readonly events: Published[];
  /** Records published a second time (same bytes, same headers). */
  readonly redelivered: Published[];
  readonly sessions: { readonly clear: string; readonly sealed: string; readonly reordered: string };
}

const at = Date.UTC(2026, 9, 12, 15, 50);
const text = (value: string) => ({ part: { $case: "text" as const, value: { text: value } } });

function sessionEvent(
  sessionId: string,
  seq: number,
  type: string,
  payload: NonNullable<SessionEvent["payload"]>,
  schemaVersion = 1,
): SessionEvent {
  return { eventId: newEventId(at + seq), sessionId, seq, occurredAtMs: at + seq, schemaVersion, type, payload };
}

function created(owner: string): NonNullable<SessionEvent["payload"]> {
  return {
    $case: "sessionCreated",
    value: {
      owner,
      workspace: "/w",
      timezone: "Asia/Shanghai",
      kind: SessionKind.SESSION_KIND_MAIN,
      parentSessionId: "",
      inheritedSummaryFrom: "",
      inheritedSummary: "",
      locale: "",
      scope: "",
    },
  };
}

function userMessage(messageId: string, words: string): NonNullable<SessionEvent["payload"]> {
  return {
    $case: "messageSaved",
    value: { messageId, role: Role.ROLE_USER, content: [text(words)], thinkingChars: 0, localDate: "2026-10-12" },
  };
}

/** A record as the outbox relays write it: key = session id, the CloudEvents and pg-* headers. */
function record(
  topic: SubscriberTopic,
  producer: EventProducer,
  event: { eventId: string; sessionId: string; occurredAtMs: number; type: string; seq?: number },
  value: Uint8Array,
): OutgoingMessage {
  return {
    key: event.sessionId,
    value,
    headers: {
      ...cloudEventHeaders(topic, producer, event),
      "pg-event-type": event.type,
      ...(event.seq === undefined ? {} : { "pg-seq": String(event.seq) }),
    },
  };
}

const sessionRecord = (event: SessionEvent) =>
  record(Topics.sessionEvents, "session-events", event, encodeSessionEvent(event));

async function ensureTopics(bus: MessageBus, prefix: string): Promise<void> {
  await bus.ensureTopics(SUBSCRIBER_TOPICS.map((topic) => ({ topic: prefix + topic, partitions: 3 })));
}

/**
 * One run: a session in clear (schema 1), one with sealed content (schema 2) and one whose seq 3 is
 * delivered before its seq 2 and whose seq 4 is of a type the consumers do not know; a prefix observation and change, a usage record and a collapse. Two
 * records are delivered twice, as a relay retry would.
 */
export async function publishRun(bus: MessageBus, label: string): Promise<PublishedRun> {
  const prefix = `${uniqueName(label)}.`;
  await ensureTopics(bus, prefix);
  const clear = uniqueName("811");
  const sealed = uniqueName("818");
  const reordered = uniqueName("820");
  const key = newDataKey();

  const a1 = sessionEvent(clear, 1, "SessionCreated", created("u1"));
  const a2 = sessionEvent(clear, 2, "MessageSaved", userMessage("m-a2", "压测重试"));
  const a3 = sessionEvent(clear, 3, "MessageSaved", {
    $case: "messageSaved",
    value: {
      messageId: "m-a3",
      role: Role.ROLE_ASSISTANT,
      content: [
        text("好的"),
        { part: { $case: "toolCall", value: { callId: "c1", name: "shell", argumentsJson: '{"cmd":"date"}' } } },
      ],
      thinkingChars: 12,
      localDate: "2026-10-12",
    },
  });
  const a4 = sessionEvent(clear, 4, "CompactionCommitted", {
    $case: "compactionCommitted",
    value: { generation: 1, boundaryMessageId: "m-a3", summary: "用户在压测重试逻辑" },
  });
  const b1 = sessionEvent(sealed, 1, "SessionCreated", created("u2"), 2);
  const b2 = sessionEvent(
    sealed,
    2,
    "MessageSaved",
    {
      $case: "messageSaved",
      value: {
        messageId: "m-b2",
        role: Role.ROLE_USER,
        content: [],
        thinkingChars: 3,
        localDate: "2026-10-12",
        sealed: sealFields(key, sealed, 2, { content: [text("封存的内容")] }),
      },
    },
    2,
  );
  const b3 = sessionEvent(sealed, 3, "MessageDeleted", { $case: "messageDeleted", value: { messageId: "m-b2" } }, 2);
  const b4 = sessionEvent(sealed, 4, "SessionDeleted", { $case: "sessionDeleted", value: {} }, 2);
  const c1 = sessionEvent(reordered, 1, "SessionCreated", created("u3"));
  const c2 = sessionEvent(reordered, 2, "MessageSaved", userMessage("m-c2", "第二"));
  const c3 = sessionEvent(reordered, 3, "MessageDeleted", { $case: "messageDeleted", value: { messageId: "m-c2" } });
  // A newer producer's event type: its payload field is unknown here, so it decodes without one.
  const { payload: _unknownHere, ...c4 } = sessionEvent(reordered, 4, "SessionArchived", {
    $case: "sessionDeleted",
    value: {},
  });
  // Each session's records go to one partition, in this order: c3 arrives before c2.
  const sessionOrder = [a1, b1, c1, a2, c3, b2, a3, c2, b3, a4, b4, c4];
  await bus.publish(prefix + Topics.sessionEvents, [
    ...sessionOrder.map(sessionRecord),
    sessionRecord(a2),
    sessionRecord(b3),
  ]);

  const observed = PrefixEvent.fromPartial({
    eventId: newEventId(at + 10),
    sessionId: clear,
    occurredAtMs: at + 10,
    schemaVersion: 1,
    type: "FingerprintObserved",
    requestId: "r-1",
    payload: {
      $case: "observed",
      value: {
        model: "claude-sonnet-4-5",
        messages: 2,
        firstBuild: true,
        rulesDecision: "DECISION_PINNED",
        estimatedTokens: 1200,
      },
    },
  });
  const changed = PrefixEvent.fromPartial({
    eventId: newEventId(at + 11),
    sessionId: clear,
    occurredAtMs: at + 11,
    schemaVersion: 1,
    type: "PrefixChanged",
    requestId: "r-2",
    payload: {
      $case: "changed",
      value: {
        changedSections: ["workspace_rules"],
        toolsChanged: false,
        historyRewritten: true,
        cause: "rules",
        messages: 4,
      },
    },
  });
  await bus.publish(prefix + Topics.promptPrefix, [
    record(Topics.promptPrefix, "prompt-assembly", observed, encodeEnvelope(PrefixEvent, observed)),
    record(Topics.promptPrefix, "prompt-assembly", changed, encodeEnvelope(PrefixEvent, changed)),
  ]);
  const usage = LlmUsageEvent.fromPartial({
    eventId: newEventId(at + 12),
    sessionId: clear,
    occurredAtMs: at + 12,
    schemaVersion: 1,
    type: "UsageRecorded",
    payload: {
      $case: "usage",
      value: {
        requestId: "r-1",
        model: "claude-sonnet-4-5",
        provider: "anthropic",
        promptTokens: 1200,
        cachedTokens: 1000,
        completionTokens: 80,
        cacheCreationTokens: 200,
      },
    },
  });
  const usageRecord = record(Topics.llmUsage, "cache-monitor", usage, encodeEnvelope(LlmUsageEvent, usage));
  await bus.publish(prefix + Topics.llmUsage, [usageRecord, usageRecord]);
  const collapse = CacheCollapseEvent.fromPartial({
    eventId: newEventId(at + 13),
    sessionId: clear,
    occurredAtMs: at + 13,
    schemaVersion: 1,
    type: "CacheCollapsed",
    payload: {
      $case: "collapsed",
      value: {
        requestId: "r-2",
        model: "claude-sonnet-4-5",
        cachedRatio: 0.25,
        baselineRatio: 0.9,
        changedSections: ["workspace_rules"],
        causeCode: "rules_changed",
        extraCost: 0.0125,
      },
    },
  });
  await bus.publish(prefix + Topics.cacheCollapse, [
    record(Topics.cacheCollapse, "cache-monitor", collapse, encodeEnvelope(CacheCollapseEvent, collapse)),
  ]);

  const sessionPublished = (event: SessionEvent): Published => ({
    topic: Topics.sessionEvents,
    eventId: event.eventId,
    sessionId: event.sessionId,
    type: event.type,
    seq: event.seq,
  });
  const other = (topic: SubscriberTopic, event: { eventId: string; sessionId: string; type: string }): Published => ({
    topic,
    eventId: event.eventId,
    sessionId: event.sessionId,
    type: event.type,
  });
  return {
    prefix,
    events: [
      ...sessionOrder.map(sessionPublished),
      other(Topics.promptPrefix, observed),
      other(Topics.promptPrefix, changed),
      other(Topics.llmUsage, usage),
      other(Topics.cacheCollapse, collapse),
    ],
    redelivered: [sessionPublished(a2), sessionPublished(b3), other(Topics.llmUsage, usage)],
    sessions: { clear, sealed, reordered },
  };
}

/** The next events of a run's clear session (seq 5) and a usage record, for a resumed consumer. */
export async function publishMore(bus: MessageBus, run: PublishedRun): Promise<Published[]> {
  const a5 = sessionEvent(run.sessions.clear, 5, "MessageSaved", userMessage("m-a5", "继续"));
  const usage = LlmUsageEvent.fromPartial({
    eventId: newEventId(at + 20),
    sessionId: run.sessions.clear,
    occurredAtMs: at + 20,
    schemaVersion: 1,
    type: "UsageRecorded",
    payload: { $case: "usage", value: { requestId: "r-3", model: "claude-sonnet-4-5", provider: "anthropic" } },
  });
  await bus.publish(run.prefix + Topics.sessionEvents, [sessionRecord(a5)]);
  await bus.publish(run.prefix + Topics.llmUsage, [
    record(Topics.llmUsage, "cache-monitor", usage, encodeEnvelope(LlmUsageEvent, usage)),
  ]);
  return [
    { topic: Topics.sessionEvents, eventId: a5.eventId, sessionId: a5.sessionId, type: a5.type, seq: 5 },
    { topic: Topics.llmUsage, eventId: usage.eventId, sessionId: usage.sessionId, type: usage.type },
  ];
}

/** A session whose seq 3 never reaches the topic: 1, 2 and 4 are published. */
export async function publishGap(bus: MessageBus, label: string): Promise<{ prefix: string; session: string }> {
  const prefix = `${uniqueName(label)}.`;
  await ensureTopics(bus, prefix);
  const session = uniqueName("830");
  await bus.publish(
    prefix + Topics.sessionEvents,
    [
      sessionEvent(session, 1, "SessionCreated", created("u4")),
      sessionEvent(session, 2, "MessageSaved", userMessage("m-d2", "一")),
      sessionEvent(session, 4, "MessageDeleted", { $case: "messageDeleted", value: { messageId: "m-d2" } }),
    ].map(sessionRecord),
  );
  return { prefix, session };
}

const events = (lines: readonly ConsumerLine[]) => lines.filter((line): line is EventLine => line.kind === "event");
const eventsOf = (lines: readonly ConsumerLine[], sessionId: string) =>
  events(lines).filter((line) => line.topic === Topics.sessionEvents && line.session_id === sessionId);

/**
 * What every consumer must print for `publishRun`: each event once with its CloudEvents attributes,
 * each session's events at seq 1, 2, 3 ... (the out-of-order one put back in order), each
 * redelivery reported as a duplicate by its id, no gap, and the payloads decoded.
 */
export function expectRunConsumed(run: ConsumerRun, published: PublishedRun): void {
  const { lines } = run;
  expect(run.code, run.stderr).toBe(0);
  const printed = events(lines);
  expect(printed.map((line) => `${line.topic} ${line.event_id}`).sort()).toEqual(
    published.events.map((event) => `${event.topic} ${event.eventId}`).sort(),
  );
  for (const line of printed) {
    const source = published.events.find((event) => event.eventId === line.event_id);
    expect(line).toMatchObject({
      session_id: source?.sessionId,
      type: source?.type,
      ce_id: line.event_id,
      ce_type: `prefixguard.${line.topic}.${line.type}`,
      ce_subject: line.session_id,
      ce_specversion: "1.0",
      ce_time: new Date(line.occurred_at_ms).toISOString(),
    });
    expect(line.ce_source).toMatch(/^prefix-guard\/(session-events|prompt-assembly|cache-monitor)$/);
  }
  const { clear, sealed, reordered } = published.sessions;
  expect(eventsOf(lines, clear).map((line) => [line.seq, line.type])).toEqual([
    [1, "SessionCreated"],
    [2, "MessageSaved"],
    [3, "MessageSaved"],
    [4, "CompactionCommitted"],
  ]);
  expect(eventsOf(lines, sealed).map((line) => [line.seq, line.type])).toEqual([
    [1, "SessionCreated"],
    [2, "MessageSaved"],
    [3, "MessageDeleted"],
    [4, "SessionDeleted"],
  ]);
  expect(eventsOf(lines, reordered).map((line) => [line.seq, line.type])).toEqual([
    [1, "SessionCreated"],
    [2, "MessageSaved"],
    [3, "MessageDeleted"],
    [4, "SessionArchived"],
  ]);
  // An unknown type is printed as such, not applied, and its seq still counts.
  expect(eventsOf(lines, reordered)[3]).toMatchObject({ unknown_type: true, payload: {} });
  const duplicates = lines.filter((line) => line.kind === "duplicate");
  expect(duplicates.map((line) => [line.topic, line.event_id, line.reason]).sort()).toEqual(
    published.redelivered.map((event) => [event.topic, event.eventId, "event_id"]).sort(),
  );
  expect(lines.filter((line) => line.kind === "gap")).toEqual([]);

  const [a1, a2, a3, a4] = eventsOf(lines, clear);
  expect(a1?.payload).toMatchObject({ owner: "u1", kind: "SESSION_KIND_MAIN", timezone: "Asia/Shanghai" });
  expect(a2?.payload).toEqual({
    message_id: "m-a2",
    role: "ROLE_USER",
    parts: ["text"],
    text_chars: 4,
    tools_called: [],
    thinking_chars: 0,
    local_date: "2026-10-12",
  });
  expect(a3?.payload).toMatchObject({
    role: "ROLE_ASSISTANT",
    parts: ["text", "tool_call"],
    tools_called: ["shell"],
    thinking_chars: 12,
  });
  expect(a4?.payload).toEqual({ generation: 1, boundary_message_id: "m-a3", summary_chars: 9 });
  expect(a2?.occurred_at_ms).toBe(at + 2);
  // Sealed content without a key: what is in clear, no content figures.
  expect(eventsOf(lines, sealed)[1]).toMatchObject({
    schema_version: 2,
    payload: { sealed: true, message_id: "m-b2", role: "ROLE_USER", thinking_chars: 3, local_date: "2026-10-12" },
  });
  expect(eventsOf(lines, sealed)[1]?.payload).not.toHaveProperty("text_chars");

  const ofTopic = (topic: TopicName) => printed.filter((line) => line.topic === topic);
  expect(ofTopic(Topics.promptPrefix).map((line) => line.payload)).toEqual([
    {
      request_id: "r-1",
      model: "claude-sonnet-4-5",
      messages: 2,
      first_build: true,
      rules_decision: "DECISION_PINNED",
      estimated_tokens: 1200,
    },
    {
      request_id: "r-2",
      cause: "rules",
      changed_sections: ["workspace_rules"],
      tools_changed: false,
      history_rewritten: true,
      messages: 4,
    },
  ]);
  expect(ofTopic(Topics.llmUsage).map((line) => line.payload)).toEqual([
    {
      request_id: "r-1",
      model: "claude-sonnet-4-5",
      provider: "anthropic",
      prompt_tokens: 1200,
      cached_tokens: 1000,
      completion_tokens: 80,
      cache_creation_tokens: 200,
    },
  ]);
  expect(ofTopic(Topics.cacheCollapse).map((line) => line.payload)).toEqual([
    {
      request_id: "r-2",
      model: "claude-sonnet-4-5",
      cached_ratio: 0.25,
      baseline_ratio: 0.9,
      cause_code: "rules_changed",
      changed_sections: ["workspace_rules"],
      extra_cost: 0.0125,
    },
  ]);
}

/** A resumed consumer (same group, same --state) prints only what `publishMore` added, with no gap. */
export function expectResumed(run: ConsumerRun, more: readonly Published[]): void {
  expect(run.code, run.stderr).toBe(0);
  expect(run.lines.map((line) => line.kind)).toEqual(more.map(() => "event"));
  expect(
    events(run.lines)
      .map((line) => `${line.topic} ${line.event_id} ${line.seq ?? "-"}`)
      .sort(),
  ).toEqual(more.map((event) => `${event.topic} ${event.eventId} ${event.seq ?? "-"}`).sort());
}

/** The gap run: 1 and 2 applied, the gap before 4 reported, 4 applied after it, exit status 6. */
export function expectGapReported(run: ConsumerRun, session: string): void {
  expect(run.code, run.stderr).toBe(6);
  expect(
    run.lines.map((line) =>
      line.kind === "gap" ? ["gap", line.session_id, line.expected_seq, line.next_seq] : [line.kind, line.seq],
    ),
  ).toEqual([
    ["event", 1],
    ["event", 2],
    ["gap", session, 3, 4],
    ["event", 4],
  ]);
}
