// docs/decisions/summary-scrubbing.md: summaries shaped to make the scrubber backtrack are valid
// input. Each goes through the running session-events (gRPC, SQLite, embedded bus) as a
// CommitCompaction and must be stored, scrubbed and capped like any other. How much work the
// scrubber did on each is bounded in commit-compaction-scrub.int.test.ts; here the whole path
// answers OK for every one.
import { callUnary } from "@prefix-guard/grpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acceptedHostileSummaries } from "./bad-input-cases";
import { type Stack, startStack } from "./stack";
import { mainSessionRequest, userTextMessage } from "./support";

const SUMMARY_MAX_CHARS = 800;
const deadline = { deadlineMs: 20_000 };

describe("hostile summaries through CommitCompaction", () => {
  let stack: Stack | undefined;

  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it("commits every one: OK, scrubbed, capped and stored as answered", async () => {
    if (stack === undefined) throw new Error("no stack");
    const { sessions } = stack;
    const cases = acceptedHostileSummaries();
    expect(cases.length).toBeGreaterThanOrEqual(30);
    for (const [index, { input, summary, personalTerms, userMessages }] of cases.entries()) {
      const sessionId = `hostile-summary-${index}`;
      await callUnary(sessions, sessions.createSession, mainSessionRequest(sessionId, "/srv/ws/hostile"), deadline);
      const first = await callUnary(sessions, sessions.saveMessage, userTextMessage(sessionId, "想问工作"), deadline);
      for (const message of userMessages) {
        await callUnary(sessions, sessions.saveMessage, userTextMessage(sessionId, message), deadline);
      }
      const committed = await callUnary(
        sessions,
        sessions.commitCompaction,
        {
          sessionId,
          expectedGeneration: 0,
          boundaryMessageId: first.messageId,
          summary,
          personalTerms: [...personalTerms],
        },
        deadline,
      );
      expect(committed.generation, input).toBe(1);
      expect([...committed.summary].length, input).toBeLessThanOrEqual(SUMMARY_MAX_CHARS);
      const stored = await callUnary(sessions, sessions.getSession, { sessionId }, deadline);
      expect(stored.summary, input).toBe(committed.summary);
    }
  });
});
