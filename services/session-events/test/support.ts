import { randomUUID } from "node:crypto";
import { newEventId } from "@prefix-guard/events";
import { Role } from "@prefix-guard/proto/common/v1/common";
import type { Knex } from "knex";
import { SessionStore } from "../src/adapters/mysql/session-store";
import { SessionCommands } from "../src/application/session-commands";

export function commandsFor(db: Knex): SessionCommands {
  return new SessionCommands({
    store: new SessionStore(db),
    now: Date.now,
    newEventId: () => newEventId(),
    newId: () => randomUUID(),
    traceparent: () => undefined,
  });
}

/** Creates `sessions` sessions with `messages` user messages each, concurrently across sessions. */
export async function writeSessions(
  commands: SessionCommands,
  prefix: string,
  sessions: number,
  messages: number,
): Promise<string[]> {
  const ids = Array.from({ length: sessions }, (_, i) => `${prefix}-${i}`);
  await Promise.all(
    ids.map(async (sessionId) => {
      await commands.createSession({
        sessionId,
        owner: "u1",
        workspace: "/w",
        timezone: "Asia/Shanghai",
        kind: 1,
        parentSessionId: "",
        continuedFromSessionId: "",
        personalTerms: [],
        locale: "",
      });
      for (let m = 0; m < messages; m++) {
        await commands.saveMessage({
          sessionId,
          role: Role.ROLE_USER,
          content: [{ part: { $case: "text", value: { text: `message ${m}` } } }],
          thinkingText: "",
        });
      }
    }),
  );
  return ids;
}
