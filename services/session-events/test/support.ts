import { randomUUID } from "node:crypto";
import { LOCAL_HARNESS } from "@prefix-guard/access";
import { newEventId } from "@prefix-guard/events";
import type { Knex } from "knex";
import { SessionStore } from "../src/adapters/mysql/session-store";
import { SessionCommands } from "../src/application/session-commands";
import { saveMessageRequest } from "./messages";

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
      await commands.createSession(
        {
          sessionId,
          owner: "u1",
          workspace: "/w",
          timezone: "Asia/Shanghai",
          kind: 1,
          parentSessionId: "",
          continuedFromSessionId: "",
          personalTerms: [],
          locale: "",
        },
        LOCAL_HARNESS,
      );
      for (let m = 0; m < messages; m++) {
        await commands.saveMessage(saveMessageRequest(sessionId, `message ${m}`), LOCAL_HARNESS);
      }
    }),
  );
  return ids;
}
