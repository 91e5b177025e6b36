import { ConflictError, FailedPreconditionError, NotFoundError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import {
  checkExpectedSeq,
  decideCompaction,
  decideInheritance,
  requireDeletableMessage,
  requireParentSession,
  requirePromotableSideTask,
  requireWritableSession,
} from "./decisions";
import type { MessageState, SessionState } from "./model";

const session = (overrides: Partial<SessionState> = {}): SessionState => ({
  sessionId: "811",
  owner: "u1",
  scope: "team-a",
  workspace: "/srv/a",
  kind: "main",
  parentSessionId: undefined,
  timezone: "Asia/Shanghai",
  lastSeq: 5,
  compactionGeneration: 2,
  compactionBoundaryMessageId: "m2",
  summary: "旧摘要",
  contentChars: 100,
  serializedBytes: 400,
  deleted: false,
  ended: false,
  lastEventAtMs: 1_700_000_000_000,
  ...overrides,
});
const message = (overrides: Partial<MessageState> = {}): MessageState => ({
  messageId: "m4",
  sessionId: "811",
  seq: 4,
  contentChars: 10,
  deleted: false,
  ...overrides,
});

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error("expected an error");
}

describe("checkExpectedSeq", () => {
  it("passes when absent or equal and conflicts with reason seq_mismatch otherwise", () => {
    expect(() => checkExpectedSeq(undefined, 5)).not.toThrow();
    expect(() => checkExpectedSeq(5, 5)).not.toThrow();
    const error = thrown(() => checkExpectedSeq(4, 5));
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as ConflictError).reason).toBe("seq_mismatch");
  });
});

describe("decideCompaction", () => {
  const decide = (overrides: Partial<Parameters<typeof decideCompaction>[0]> = {}) =>
    decideCompaction({
      session: session(),
      expectedGeneration: 2,
      boundaryMessageId: "m4",
      boundary: message(),
      currentBoundary: message({ messageId: "m2", seq: 2 }),
      ...overrides,
    });

  it("advances the generation when the caller compacted from the current one", () => {
    expect(decide().generation).toBe(3);
    expect(
      decide({
        session: session({ compactionGeneration: 0, compactionBoundaryMessageId: undefined }),
        expectedGeneration: 0,
        currentBoundary: undefined,
      }).generation,
    ).toBe(1);
  });

  it("loses the compare-and-set with generation_mismatch on a stale generation", () => {
    for (const expectedGeneration of [1, 3]) {
      const error = thrown(() => decide({ expectedGeneration }));
      expect(error).toBeInstanceOf(ConflictError);
      expect((error as ConflictError).reason).toBe("generation_mismatch");
    }
  });

  it("requires a live boundary message of this session, not behind the current boundary", () => {
    expect(thrown(() => decide({ boundary: undefined }))).toBeInstanceOf(NotFoundError);
    expect(thrown(() => decide({ boundary: message({ sessionId: "other" }) }))).toBeInstanceOf(NotFoundError);
    const deleted = thrown(() => decide({ boundary: message({ deleted: true }) }));
    expect(deleted).toBeInstanceOf(FailedPreconditionError);
    expect((deleted as FailedPreconditionError).reason).toBe("boundary_deleted");
    expect((thrown(() => decide({ boundary: message({ seq: 1 }) })) as FailedPreconditionError).reason).toBe(
      "boundary_moved_back",
    );
  });
});

describe("session state checks", () => {
  it("treats deleted sessions as missing and ended side tasks as closed for writes", () => {
    expect(thrown(() => requireWritableSession(undefined, "x"))).toBeInstanceOf(NotFoundError);
    expect(thrown(() => requireWritableSession(session({ deleted: true }), "811"))).toBeInstanceOf(NotFoundError);
    expect(thrown(() => requireWritableSession(session({ kind: "side", ended: true }), "811"))).toBeInstanceOf(
      FailedPreconditionError,
    );
    expect(requireWritableSession(session(), "811").sessionId).toBe("811");
  });

  it("promotes only live, not yet promoted side tasks", () => {
    expect((thrown(() => requirePromotableSideTask(session(), "811")) as FailedPreconditionError).reason).toBe(
      "not_side_task",
    );
    expect(
      (
        thrown(() =>
          requirePromotableSideTask(session({ kind: "side", ended: true }), "811"),
        ) as FailedPreconditionError
      ).reason,
    ).toBe("session_ended");
    expect(requirePromotableSideTask(session({ kind: "side" }), "811").kind).toBe("side");
  });

  it("deletes only visible messages of the same session", () => {
    expect(thrown(() => requireDeletableMessage(message({ deleted: true }), "811", "m4"))).toBeInstanceOf(
      NotFoundError,
    );
    expect(thrown(() => requireDeletableMessage(message({ sessionId: "812" }), "811", "m4"))).toBeInstanceOf(
      NotFoundError,
    );
    expect(requireDeletableMessage(message(), "811", "m4").messageId).toBe("m4");
  });

  it("accepts a parent only when it is live and has the same owner in the same scope", () => {
    const u1 = { owner: "u1", scope: "team-a" };
    expect(thrown(() => requireParentSession(session({ owner: "u2" }), "811", u1))).toBeInstanceOf(NotFoundError);
    expect(thrown(() => requireParentSession(session({ deleted: true }), "811", u1))).toBeInstanceOf(NotFoundError);
    expect(thrown(() => requireParentSession(session({ scope: "team-b" }), "811", u1))).toBeInstanceOf(NotFoundError);
    expect(requireParentSession(session(), "811", u1).sessionId).toBe("811");
  });
});

describe("decideInheritance", () => {
  it("copies the summary only from a live source of the same owner in the same scope", () => {
    const u1 = { owner: "u1", scope: "team-a" };
    expect(decideInheritance(session(), u1)).toEqual({ from: "811", summary: "旧摘要" });
    expect(decideInheritance(session(), { owner: "u2", scope: "team-a" })).toBeUndefined();
    // The same owner name in another tenant is another person.
    expect(decideInheritance(session(), { owner: "u1", scope: "team-b" })).toBeUndefined();
    expect(decideInheritance(undefined, u1)).toBeUndefined();
    expect(decideInheritance(session({ deleted: true }), u1)).toBeUndefined();
    expect(decideInheritance(session({ summary: "" }), u1)).toBeUndefined();
  });
});
