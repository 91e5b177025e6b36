// A subscriber built against contract 1 (the .proto files of the release before sealed content,
// kept in deploy/test/fixtures/contract-1) decodes every schema-2 event without error: the sealed
// fields are new field numbers it skips as unknown, and it sees no content in clear. Decoded by
// protoc, a client this project did not write.

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { encodeSessionEvent, newDataKey, SESSION_EVENT_SCHEMA_VERSION, sealFields } from "@prefix-guard/events";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { describe, expect, it } from "vitest";
import { repoRoot } from "./support";

const protoc = existsSync("/usr/bin/protoc") ? "/usr/bin/protoc" : "protoc";
const contract1 = join(repoRoot, "deploy/test/fixtures/contract-1");
const CANARY = "CANARY-contract1-subscriber";

function decodeWithContract1(bytes: Uint8Array): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(
    protoc,
    [`--decode=prefixguard.events.v1.SessionEvent`, `-I${contract1}`, "prefixguard/events/v1/session_events.proto"],
    { input: Buffer.from(bytes), cwd: contract1 },
  );
  return { status: run.status, stdout: run.stdout.toString(), stderr: run.stderr.toString() };
}

describe("a contract-1 subscriber reading schema-2 events", () => {
  const key = newDataKey();
  const event = (seq: number, payload: SessionEvent["payload"], type: string): SessionEvent => ({
    eventId: `evt-${seq}`,
    sessionId: "s-contract1",
    seq,
    occurredAtMs: 1_760_000_000_000,
    schemaVersion: SESSION_EVENT_SCHEMA_VERSION,
    type,
    payload,
  });
  const events: SessionEvent[] = [
    event(
      1,
      {
        $case: "sessionCreated",
        value: {
          owner: "u1",
          workspace: "/w",
          timezone: "Asia/Shanghai",
          kind: SessionKind.SESSION_KIND_MAIN,
          parentSessionId: "",
          inheritedSummaryFrom: "s-old",
          inheritedSummary: "",
          locale: "en",
          scope: "team-a",
          sealed: sealFields(key, "s-contract1", 1, { inheritedSummary: `${CANARY} inherited` }),
        },
      },
      "SessionCreated",
    ),
    event(
      2,
      {
        $case: "messageSaved",
        value: {
          messageId: "m1",
          role: Role.ROLE_USER,
          content: [],
          thinkingChars: 0,
          localDate: "2025-10-09",
          sealed: sealFields(key, "s-contract1", 2, {
            content: [{ part: { $case: "text", value: { text: `${CANARY} message` } } }],
          }),
        },
      },
      "MessageSaved",
    ),
    event(
      3,
      {
        $case: "compactionCommitted",
        value: {
          generation: 1,
          boundaryMessageId: "m1",
          summary: "",
          sealed: sealFields(key, "s-contract1", 3, { summary: `${CANARY} summary` }),
        },
      },
      "CompactionCommitted",
    ),
  ];

  it.each(events.map((e) => [e.type, e] as const))("decodes %s without error and shows no content", (_type, e) => {
    const decoded = decodeWithContract1(encodeSessionEvent(e));
    expect(decoded.stderr).toBe("");
    expect(decoded.status).toBe(0);
    expect(decoded.stdout).toContain("schema_version: 2");
    expect(decoded.stdout).toContain(`type: "${e.type}"`);
    expect(decoded.stdout).not.toContain(CANARY);
  });
});
