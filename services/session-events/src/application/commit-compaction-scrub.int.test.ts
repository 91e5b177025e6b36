// CommitCompaction scrubs its summary before taking the session's row lock, and
// hostile summaries complete with the scrubber's work linear in their length.
import { randomUUID } from "node:crypto";
import { LOCAL_HARNESS } from "@prefix-guard/access";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase, createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { newEventId } from "@prefix-guard/events";
import { sessionEventsMigrations } from "@prefix-guard/migrations/session-events";
import {
  CommitCompactionRequest,
  CreateSessionRequest,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { hostileSummaries } from "../../test/hostile-summaries";
import { saveMessageRequest } from "../../test/messages";
import { SessionStore, type SessionTransaction } from "../adapters/mysql/session-store";
import { SUMMARY_MAX_CHARS } from "../domain/limits";
import { SCRUB_MARKER } from "../domain/summary-scrub";
import { codePointLength } from "../domain/text";
import { SessionCommands } from "./session-commands";

/** Every scrubSummary call: whether a session row was locked at the time, and the work it took. */
const scrubs = vi.hoisted(() => ({
  lockedNow: (): boolean => false,
  calls: [] as { locked: boolean; chars: number; steps: number; terms: readonly string[] }[],
}));

vi.mock("../domain/summary-scrub", async (importOriginal) => {
  const original = await importOriginal<typeof import("../domain/summary-scrub")>();
  return {
    ...original,
    scrubSummary: (summary: string, terms: readonly string[]) => {
      const work = { steps: 0 };
      const scrubbed = original.scrubSummary(summary, terms, work);
      scrubs.calls.push({ locked: scrubs.lockedNow(), chars: summary.length, steps: work.steps, terms });
      return scrubbed;
    },
  };
});

/**
 * The real store, counting the transactions that hold a session row (a locking readSession) until
 * they end, and running `afterScrub` once, before the first transaction that starts after a scrub.
 */
class TrackingStore extends SessionStore {
  locked = 0;
  afterScrub: (() => Promise<unknown>) | undefined;

  override async transaction<T>(work: (tx: SessionTransaction) => Promise<T>): Promise<T> {
    const hook = this.afterScrub;
    if (hook !== undefined && scrubs.calls.length > 0) {
      this.afterScrub = undefined;
      await hook();
    }
    let holdsLock = false;
    try {
      return await super.transaction((tx) => {
        const readSession = tx.readSession.bind(tx);
        tx.readSession = async (sessionId, lock) => {
          if (lock && !holdsLock) {
            holdsLock = true;
            this.locked++;
          }
          return readSession(sessionId, lock);
        };
        return work(tx);
      });
    } finally {
      if (holdsLock) this.locked--;
    }
  }
}

// About twenty passes over the text, plus a few steps per term occurrence (summary-scrub.unit.test.ts).
const STEPS_PER_CHAR = 40;
const STEPS_PER_OCCURRENCE = 4;

function suite(name: string, open: () => Promise<{ db: Database; close: () => Promise<void> }>) {
  describe(name, () => {
    let close: () => Promise<void>;
    let store: TrackingStore;
    let commands: SessionCommands;

    beforeAll(async () => {
      let db: Database;
      ({ db, close } = await open());
      await runMigrations(db, sessionEventsMigrations);
      store = new TrackingStore(db);
      scrubs.lockedNow = () => store.locked > 0;
      commands = new SessionCommands({
        store,
        now: () => Date.UTC(2026, 9, 12, 4),
        newEventId: () => newEventId(Date.UTC(2026, 9, 12, 4)),
        newId: () => randomUUID(),
        traceparent: () => undefined,
      });
    });
    afterAll(async () => close());
    beforeEach(() => {
      scrubs.calls.length = 0;
    });

    const newSession = async (...userMessages: string[]) => {
      const created = await commands.createSession(
        CreateSessionRequest.fromPartial({ owner: "u1", workspace: "/w" }),
        LOCAL_HARNESS,
      );
      const sessionId = created.session?.sessionId ?? "";
      const saved = [];
      for (const message of ["想问工作", ...userMessages]) {
        saved.push(await commands.saveMessage(saveMessageRequest(sessionId, message), LOCAL_HARNESS));
      }
      return { sessionId, boundary: saved[0]?.messageId ?? "" };
    };
    const compact = (sessionId: string, boundary: string, summary: string, personalTerms: readonly string[] = []) =>
      commands.commitCompaction(
        CommitCompactionRequest.fromPartial({
          sessionId,
          expectedGeneration: 0,
          boundaryMessageId: boundary,
          summary,
          personalTerms: [...personalTerms],
        }),
        LOCAL_HARNESS,
      );

    it("scrubs once, while no session row is locked, with the session's own terms", async () => {
      const { sessionId, boundary } = await newSession("我叫林晓梅，出生于青岛");
      const response = await compact(sessionId, boundary, "林晓梅来自青岛，关心工作");
      expect(response.summary).toBe(`${SCRUB_MARKER}来自${SCRUB_MARKER}，关心工作`);
      expect(scrubs.calls.map((call) => call.locked)).toEqual([false]);
    });

    it("scrubs again under the lock when a user message came in after the first scrub", async () => {
      const { sessionId, boundary } = await newSession();
      // After the unlocked scrub and before the locked write: the user states a name the summary has.
      store.afterScrub = () => commands.saveMessage(saveMessageRequest(sessionId, "我叫王伟，想跳槽"), LOCAL_HARNESS);
      const response = await compact(sessionId, boundary, "王伟想跳槽");
      expect(response.summary).toBe(`${SCRUB_MARKER}想跳槽`);
      expect(scrubs.calls.map((call) => call.locked)).toEqual([false, true]);
      expect(scrubs.calls[1]?.terms).toContain("王伟");
      expect(scrubs.calls[0]?.terms).not.toContain("王伟");
    });

    it("completes every hostile summary, the scrub linear in its length and outside the lock", async () => {
      for (const { name, summary, personalTerms } of hostileSummaries()) {
        // Terms a session yields beyond what a harness may pass come from the user's own messages.
        const selfStated = personalTerms.length > 100;
        const statements = selfStated ? personalTerms.map((term) => `我叫${term}。`) : [];
        const messages = Array.from({ length: Math.ceil(statements.length / 500) }, (_, i) =>
          statements.slice(i * 500, (i + 1) * 500).join(""),
        );
        const { sessionId, boundary } = await newSession(...messages);
        scrubs.calls.length = 0;
        const response = await compact(sessionId, boundary, summary, selfStated ? [] : personalTerms);
        expect(response.generation, name).toBe(1);
        expect(codePointLength(response.summary), name).toBeLessThanOrEqual(SUMMARY_MAX_CHARS);
        const [call, ...more] = scrubs.calls;
        expect(more, name).toEqual([]);
        expect(call?.locked, name).toBe(false);
        const terms = call?.terms ?? [];
        expect(terms.length, name).toBeGreaterThanOrEqual(personalTerms.length);
        const termChars = terms.reduce((sum, term) => sum + term.length, 0);
        const lengths = new Set(terms.map((term) => term.length)).size;
        expect(call?.steps, name).toBeLessThanOrEqual(
          STEPS_PER_CHAR * (summary.length + termChars) + STEPS_PER_OCCURRENCE * summary.length * lengths,
        );
      }
    });
  });
}

let mariadb: TestDatabase;
suite("CommitCompaction scrubbing on real MariaDB", async () => {
  mariadb = await createTestDatabase("commit_scrub");
  const db = createDatabase(mariadb.url, { multipleStatements: true });
  return {
    db,
    close: async () => {
      await db.destroy();
      await mariadb.drop();
    },
  };
});
suite("CommitCompaction scrubbing on SQLite", async () => {
  const db = createMemoryDatabase();
  return { db, close: () => db.destroy() };
});
