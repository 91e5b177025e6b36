// The event catalog cannot fall behind the contract: every payload of every topic's envelope, as the
// .proto files define it, has a CloudEvents type and a row in the README's "Event catalog", and the
// README lists no type the contract does not have. A new event added to a .proto without its row fails
// here. (That the records really carry these headers on the broker: cloudevents-kcat.e2e.test.ts.)

import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  cloudEventDataSchema,
  cloudEventType,
  EVENT_CONTRACT_VERSION,
  SESSION_EVENT_SCHEMA_VERSION,
  sessionEventType,
  TOPIC_ENVELOPES,
  Topics,
} from "@prefix-guard/events";
import { describe, expect, it } from "vitest";
import { rulesEventType } from "../../services/rules-snapshot/src/domain/snapshot-events";
import { eventEnvelopesInProto, eventTypesByTopic } from "./event-messages";

const repoRoot = join(import.meta.dirname, "../..");

/** The README's "## Event catalog" section, up to the next `## ` heading. */
function eventCatalogSection(): string {
  const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
  const start = readme.indexOf("\n## Event catalog\n");
  if (start < 0) throw new Error('README.md has no "## Event catalog" section');
  const end = readme.indexOf("\n## ", start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

/** The first cell of every table row that is a ce_type, e.g. `prefixguard.session.events.v1.MessageSaved`. */
function catalogedTypes(section: string): string[] {
  return [...section.matchAll(/^\| `(prefixguard\.[^`]+)` \|/gm)].map((match) => match[1] ?? "");
}

describe("event catalog", () => {
  const byTopic = eventTypesByTopic();
  const expected = [...byTopic].flatMap(([topic, types]) => types.map((type) => cloudEventType(topic, type)));

  it("reads the contract from the .proto files (the scan itself works)", () => {
    expect(byTopic.get(Topics.sessionEvents)).toEqual([
      "SessionCreated",
      "MessageSaved",
      "MessageDeleted",
      "CompactionCommitted",
      "SessionDeleted",
      "SideTaskPromoted",
    ]);
    expect(byTopic.get(Topics.llmUsage)).toEqual(["UsageRecorded"]);
    expect(expected.length).toBeGreaterThanOrEqual(15);
  });

  it("every envelope in the .proto files is carried by exactly one topic", () => {
    expect([...eventEnvelopesInProto().keys()].sort()).toEqual(Object.values(TOPIC_ENVELOPES).sort());
    expect(new Set(Object.values(TOPIC_ENVELOPES)).size).toBe(Object.keys(TOPIC_ENVELOPES).length);
  });

  it("every event type of every topic has a ce_type and a README row, and every row is such a type", () => {
    const rows = catalogedTypes(eventCatalogSection());
    const missing = expected.filter((type) => !rows.includes(type));
    expect(missing, `README "Event catalog" has no row for: ${missing.join(", ")}`).toEqual([]);
    const stale = rows.filter((type) => !expected.includes(type));
    expect(stale, `README "Event catalog" lists types the .proto files do not have: ${stale.join(", ")}`).toEqual([]);
    expect(new Set(rows).size, "a ce_type listed twice").toBe(rows.length);
  });

  it("the `type` producers write is the payload message's name, so their ce_type is a catalogued one", () => {
    const sessionTypes = (
      [
        "sessionCreated",
        "messageSaved",
        "messageDeleted",
        "compactionCommitted",
        "sessionDeleted",
        "sideTaskPromoted",
      ] as const
    ).map((kind) => sessionEventType({ $case: kind, value: {} } as Parameters<typeof sessionEventType>[0]));
    expect(sessionTypes.sort()).toEqual([...(byTopic.get(Topics.sessionEvents) ?? [])].sort());
    const rulesTypes = (["pinned", "retainedChanged", "retainedEmpty", "invalidated", "deleted"] as const).map((kind) =>
      rulesEventType({ $case: kind, value: {} } as Parameters<typeof rulesEventType>[0]),
    );
    expect(rulesTypes.sort()).toEqual([...(byTopic.get(Topics.rulesSnapshot) ?? [])].sort());
    expect(SESSION_EVENT_SCHEMA_VERSION).toBeGreaterThanOrEqual(1);
  });

  it("ce_dataschema's contract version is the newest contract CHANGELOG.md names, and the README's example uses it", () => {
    const changelog = readFileSync(join(repoRoot, "CHANGELOG.md"), "utf8");
    const newest = /^## .*\bcontract (\d+)\b/m.exec(changelog)?.[1];
    expect(Number(newest)).toBe(EVENT_CONTRACT_VERSION);
    expect(eventCatalogSection()).toContain(`\`${cloudEventDataSchema(Topics.sessionEvents)}\``);
  });
});
