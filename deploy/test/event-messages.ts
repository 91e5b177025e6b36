// The event contract as the .proto files state it, for tests that must not drift from it: every
// envelope message under proto/prefixguard/events/v1 (a message with a `payload` oneof) and the
// payload messages of each, i.e. the event types a topic can carry. Read with protobufjs'
// reflection, so a new payload added to a .proto shows up here without anyone listing it.

import { readdirSync } from "node:fs";
import { join } from "node:path";
import { TOPIC_ENVELOPES, type TopicName } from "@prefix-guard/events";
import protobuf from "protobufjs";

const repoRoot = join(import.meta.dirname, "../..");

const protoRoot = join(repoRoot, "proto");
const eventsDir = "prefixguard/events/v1";

/** Envelope full name → its payload messages' names (the event types), in field order. */
export function eventEnvelopesInProto(): Map<string, string[]> {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(protoRoot, target);
  const files = readdirSync(join(protoRoot, eventsDir))
    .filter((file) => file.endsWith(".proto"))
    .map((file) => `${eventsDir}/${file}`);
  root.loadSync(files, { keepCase: true }).resolveAll();
  const events = root.lookup("prefixguard.events.v1");
  if (!(events instanceof protobuf.Namespace)) throw new Error("no package prefixguard.events.v1 in the .proto files");
  const envelopes = new Map<string, string[]>();
  for (const nested of events.nestedArray) {
    const payload = nested instanceof protobuf.Type ? nested.oneofs?.payload : undefined;
    if (payload === undefined) continue;
    envelopes.set(
      nested.fullName.replace(/^\./, ""),
      payload.fieldsArray.map((field) => field.resolvedType?.name ?? field.type),
    );
  }
  return envelopes;
}
/** Each topic's event types, from the envelope TOPIC_ENVELOPES says it carries. */
export function eventTypesByTopic(): Map<TopicName, string[]> {
  const envelopes = eventEnvelopesInProto();
  const byTopic = new Map<TopicName, string[]>();
  for (const [topic, envelope] of Object.entries(TOPIC_ENVELOPES) as [TopicName, string][]) {
    const types = envelopes.get(envelope);
    if (types === undefined) throw new Error(`${topic} carries ${envelope}, which no events .proto defines`);
    byTopic.set(topic, types);
  }
  return byTopic;
}
