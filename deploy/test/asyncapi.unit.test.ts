// docs/asyncapi.yaml is valid AsyncAPI (the official parser, @asyncapi/parser, reports no error or
// warning) and cannot drift from the code: its channels are the topics of libs/events and their DLQs,
// with libs/runtime's partitions and retention; each topic's messages are the event types of its
// envelope as the .proto files define them; each message's headers carry the ce_type, ce_dataschema
// and ce_source the producers write (their cloudEventHeaders calls, found in services/*/src); the
// DLQ headers and reasons are the ones the dead-letter code writes.

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fromFile, type MessageInterface, Parser } from "@asyncapi/parser";
import {
  CLOUDEVENTS_SPEC_VERSION,
  cloudEventDataSchema,
  cloudEventHeaders,
  cloudEventType,
  dlqTopic,
  EVENT_CONTENT_TYPE,
  EVENT_CONTRACT_VERSION,
  TOPIC_ENVELOPES,
  type TopicName,
  Topics,
} from "@prefix-guard/events";
import { defaultTopicSpecs } from "@prefix-guard/runtime";
import { describe, expect, it } from "vitest";
import { eventTypesByTopic } from "./event-messages";
import { repoRoot } from "./support";

const PROTOBUF_SCHEMA_FORMAT = "application/vnd.google.protobuf;version=3";
/** Spectral's severities: 0 error, 1 warning, 2 information, 3 hint. */
const WARNING = 1;

const { document, diagnostics } = await fromFile(new Parser(), join(repoRoot, "docs/asyncapi.yaml")).parse();

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema fragments as the parser returns them.
type Schema = any;

/** Every schema of an allOf tree, outermost first (a message's headers are allOf [shared headers, its own]). */
function schemaParts(schema: Schema): Schema[] {
  if (schema === undefined || schema === null) return [];
  return [schema, ...(Array.isArray(schema.allOf) ? schema.allOf.flatMap(schemaParts) : [])];
}
/** One header's constraints, merged over the allOf tree. */
function headerSchema(message: MessageInterface, header: string): Schema {
  return Object.assign({}, ...schemaParts(message.headers()?.json()).map((part) => part.properties?.[header] ?? {}));
}
function requiredHeaders(message: MessageInterface): string[] {
  return schemaParts(message.headers()?.json()).flatMap((part) => part.required ?? []);
}
/** The values a header may take: its `const`, or its `enum`. */
function headerValues(message: MessageInterface, header: string): string[] {
  const schema = headerSchema(message, header);
  return schema.const !== undefined ? [schema.const] : (schema.enum ?? []);
}

function channelAt(address: string) {
  if (document === undefined) throw new Error("docs/asyncapi.yaml did not parse");
  const channel = document
    .channels()
    .all()
    .find((candidate) => candidate.address() === address);
  if (channel === undefined) throw new Error(`docs/asyncapi.yaml has no channel with address ${address}`);
  return channel;
}

/** Non-test TypeScript under services/*\/src. */
function serviceSources(): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts")) files.push(path);
    }
  };
  for (const service of readdirSync(join(repoRoot, "services"))) walk(join(repoRoot, "services", service, "src"));
  return files;
}

/** topic → `prefix-guard/<producer>` for every `cloudEventHeaders(Topics.x, "producer", …)` in the services. */
function producersInCode(): Map<string, Set<string>> {
  const topicOfKey = new Map<string, string>(Object.entries(Topics));
  const producers = new Map<string, Set<string>>();
  for (const file of serviceSources()) {
    for (const match of readFileSync(file, "utf8").matchAll(/cloudEventHeaders\(\s*Topics\.(\w+),\s*"([a-z-]+)"/g)) {
      const topic = topicOfKey.get(match[1] ?? "");
      if (topic === undefined) throw new Error(`${file}: cloudEventHeaders(Topics.${match[1]}, …): no such topic`);
      const set = producers.get(topic) ?? new Set<string>();
      set.add(`prefix-guard/${match[2]}`);
      producers.set(topic, set);
    }
  }
  return producers;
}

const topics = Object.values(Topics) as TopicName[];
const eventTypes = eventTypesByTopic();

describe("docs/asyncapi.yaml", () => {
  it("is valid AsyncAPI 3: the official parser reports no error and no warning", () => {
    const problems = diagnostics
      .filter((diagnostic) => diagnostic.severity <= WARNING)
      .map((diagnostic) => `${diagnostic.path.join("/")}: ${diagnostic.message}`);
    expect(problems).toEqual([]);
    expect(document?.version()).toMatch(/^3\./);
  });

  it("names the contract version every record's ce_dataschema carries", () => {
    expect(document?.info().version()).toBe(String(EVENT_CONTRACT_VERSION));
  });

  it("has a channel for every topic in the code and its DLQ, and for nothing else", () => {
    const addresses = (document?.channels().all() ?? []).map((channel) => channel.address()).sort();
    expect(addresses).toEqual(topics.flatMap((topic) => [topic, dlqTopic(topic)]).sort());
    expect(addresses).toEqual(
      defaultTopicSpecs()
        .map((spec) => spec.topic)
        .sort(),
    );
  });

  it.each(defaultTopicSpecs().map((spec) => [spec.topic, spec] as const))(
    "%s: the Kafka binding has the partitions and retention the services create it with",
    (topic, spec) => {
      const binding = channelAt(topic).bindings().get("kafka")?.value();
      expect(binding?.topic).toBe(topic);
      expect(binding?.partitions).toBe(spec.partitions);
      expect(binding?.topicConfiguration?.["retention.ms"]).toBe(spec.retentionMs);
    },
  );

  it.each(topics.map((topic) => [topic] as const))(
    "%s: one message per event type of its envelope in the .proto files, each with the headers its producers write",
    (topic) => {
      const messages = channelAt(topic).messages().all();
      expect(messages.map((message) => message.name()).sort()).toEqual([...(eventTypes.get(topic) ?? [])].sort());
      const producers = [...(producersInCode().get(topic) ?? [])].sort();
      expect(producers.length, `no cloudEventHeaders(Topics…, "${topic}") call found in services/`).toBeGreaterThan(0);
      for (const message of messages) {
        const type = message.name() ?? "";
        expect(message.payload()?.json(), type).toMatchObject({
          schemaFormat: PROTOBUF_SCHEMA_FORMAT,
          schema: TOPIC_ENVELOPES[topic],
        });
        expect(headerValues(message, "ce_type"), type).toEqual([cloudEventType(topic, type)]);
        expect(headerValues(message, "ce_dataschema"), type).toEqual([cloudEventDataSchema(topic)]);
        expect(headerValues(message, "pg-event-type"), type).toEqual([type]);
        expect([...headerValues(message, "ce_source")].sort(), type).toEqual(producers);
        expect(message.bindings().get("kafka")?.value()?.key?.["x-parser-schema-id"], type).toBe("SessionKey");
      }
    },
  );

  it("describes every header cloudEventHeaders writes, requiring all but ce_subject", () => {
    const written = cloudEventHeaders(Topics.sessionEvents, "session-events", {
      eventId: "e-1",
      sessionId: "811",
      occurredAtMs: 1_760_000_000_000,
      type: "MessageSaved",
    });
    for (const topic of topics) {
      for (const message of channelAt(topic).messages().all()) {
        const required = requiredHeaders(message);
        for (const header of Object.keys(written)) {
          expect(headerSchema(message, header), `${message.name()} ${header}`).not.toEqual({});
          if (header !== "ce_subject") expect(required, `${message.name()} ${header}`).toContain(header);
        }
        expect(headerValues(message, "ce_specversion")).toEqual([CLOUDEVENTS_SPEC_VERSION]);
        expect(headerValues(message, "content-type")).toEqual([EVENT_CONTENT_TYPE]);
        expect(required.includes("pg-seq"), `${message.name()} pg-seq`).toBe(topic === Topics.sessionEvents);
      }
    }
  });

  it("each DLQ carries its topic's envelope with the pg-dlq-* headers and reasons the dead-letter code writes", () => {
    const consumer = readFileSync(join(repoRoot, "libs/bus/src/event-consumer.ts"), "utf8");
    const dlqHeaders = [...new Set([...consumer.matchAll(/"(pg-dlq-[a-z]+)":/g)].map((match) => match[1]))].sort();
    const reasons = [...new Set([...consumer.matchAll(/deadLetter\([\w.]+, "([a-z]+)"/g)].map((match) => match[1]))];
    expect(dlqHeaders.length).toBeGreaterThanOrEqual(4);
    expect(reasons.length).toBeGreaterThanOrEqual(3);
    for (const topic of topics) {
      const [message, ...others] = channelAt(dlqTopic(topic)).messages().all();
      expect(others).toEqual([]);
      if (message === undefined) throw new Error(`${dlqTopic(topic)} has no message`);
      expect(message.payload()?.json()).toMatchObject({
        schemaFormat: PROTOBUF_SCHEMA_FORMAT,
        schema: TOPIC_ENVELOPES[topic],
      });
      expect(requiredHeaders(message).sort()).toEqual(dlqHeaders);
      expect(headerValues(message, "pg-dlq-reason").sort()).toEqual(reasons.sort());
      expect(headerValues(message, "ce_dataschema")).toEqual([cloudEventDataSchema(topic)]);
    }
  });

  it("every channel has a send operation that lists all of its messages", () => {
    for (const channel of document?.channels().all() ?? []) {
      const operations = channel.operations().all();
      expect(
        operations.map((operation) => operation.action()),
        channel.address() ?? "",
      ).toEqual(["send"]);
      const listed = operations.flatMap((operation) =>
        operation
          .messages()
          .all()
          .map((message) => message.name()),
      );
      expect(listed.sort(), channel.address() ?? "").toEqual(
        channel
          .messages()
          .all()
          .map((message) => message.name())
          .sort(),
      );
    }
  });
});
