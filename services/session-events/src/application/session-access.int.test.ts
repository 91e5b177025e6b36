// Who sees which session, at the use-case level: the same rules the gRPC matrix e2e checks from
// outside, here with each rule on its own so a broken one names itself.

import { randomUUID } from "node:crypto";
import type { Caller, Principal, Role } from "@prefix-guard/access";
import { type Database, runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase } from "@prefix-guard/db/testing";
import { NotFoundError, PermissionDeniedError, ResourceExhaustedError } from "@prefix-guard/errors";
import { newEventId } from "@prefix-guard/events";
import { sessionEventsMigrations } from "@prefix-guard/migrations/session-events";
import {
  CommitCompactionRequest,
  CreateSessionRequest,
  DeleteMessageRequest,
  DeleteSessionRequest,
  GetSessionRequest,
  ListMessagesRequest,
  PromoteSideTaskRequest,
  ReadEventsRequest,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { saveMessageRequest } from "../../test/messages";
import { SessionStore } from "../adapters/mysql/session-store";
import { SessionCommands } from "./session-commands";

function principal(name: string, fields: Partial<Principal> = {}): Principal {
  return {
    name,
    roles: new Set<Role>(["harness"]),
    scope: "team-a",
    owners: ["*"],
    workspaces: ["/srv/a/"],
    limits: {},
    ...fields,
  };
}
const as = (p: Principal, role: Role = "harness"): Caller => ({ principal: p, role });

const harnessA = as(principal("harness-a"));
const harnessB = as(principal("harness-b", { scope: "team-b", workspaces: ["/srv/b/"] }));
// Same tenant as A, but granted only owner u2 / only workspace /srv/a/other/.
const otherOwner = as(principal("harness-a-u2", { owners: ["u2"] }));
const otherWorkspace = as(principal("harness-a-ws", { workspaces: ["/srv/a/other/"] }));
const peer = as(principal("prompt-assembly", { roles: new Set(["peer"]), scope: "" }), "peer");

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the call to fail");
}

describe("session visibility by principal (SQLite)", () => {
  let db: Database;
  let commands: SessionCommands;
  let sessionA: string;
  let messageA: string;

  const counts = async () => ({
    events: Number(((await db("session_event").count({ n: "*" }).first()) as { n: number }).n),
    sessions: Number(((await db("session").count({ n: "*" }).first()) as { n: number }).n),
    messages: Number(((await db("message").count({ n: "*" }).first()) as { n: number }).n),
  });

  beforeAll(async () => {
    db = await createMemoryDatabase();
    await runMigrations(db, sessionEventsMigrations);
    commands = new SessionCommands({
      store: new SessionStore(db),
      now: Date.now,
      newEventId: () => newEventId(),
      newId: () => randomUUID(),
      traceparent: () => undefined,
    });
    const created = await commands.createSession(
      CreateSessionRequest.fromPartial({ sessionId: "sa", owner: "u1", workspace: "/srv/a/x" }),
      harnessA,
    );
    sessionA = created.session?.sessionId ?? "";
    messageA = (await commands.saveMessage(saveMessageRequest(sessionA, "hello"), harnessA)).messageId;
  });
  afterAll(async () => db.destroy());

  const everySessionCall: ReadonlyArray<[string, (caller: Caller, sessionId: string) => Promise<unknown>]> = [
    ["SaveMessage", (c, id) => commands.saveMessage(saveMessageRequest(id, "intrusion"), c)],
    [
      "DeleteMessage",
      (c, id) => commands.deleteMessage(DeleteMessageRequest.fromPartial({ sessionId: id, messageId: messageA }), c),
    ],
    [
      "CommitCompaction",
      (c, id) =>
        commands.commitCompaction(
          CommitCompactionRequest.fromPartial({ sessionId: id, boundaryMessageId: messageA, summary: "planted" }),
          c,
        ),
    ],
    ["DeleteSession", (c, id) => commands.deleteSession(DeleteSessionRequest.fromPartial({ sessionId: id }), c)],
    ["PromoteSideTask", (c, id) => commands.promoteSideTask(PromoteSideTaskRequest.fromPartial({ sessionId: id }), c)],
    ["ReadEvents", (c, id) => commands.readEvents(ReadEventsRequest.fromPartial({ sessionId: id }), c)],
    ["GetSession", (c, id) => commands.getSession(GetSessionRequest.fromPartial({ sessionId: id }), c)],
    ["ListMessages", (c, id) => commands.listMessages(ListMessagesRequest.fromPartial({ sessionId: id }), c)],
  ];

  it.each(everySessionCall)(
    "%s: another tenant's session answers exactly as a missing one, and nothing changes",
    async (_name, call) => {
      const before = await counts();
      for (const caller of [harnessB, otherOwner, otherWorkspace]) {
        const denied = await failure(call(caller, sessionA));
        const missing = await failure(call(caller, "no-such-session"));
        expect(denied).toBeInstanceOf(NotFoundError);
        expect({ message: denied.message.replace(sessionA, "ID"), reason: (denied as NotFoundError).reason }).toEqual({
          message: missing.message.replace("no-such-session", "ID"),
          reason: (missing as NotFoundError).reason,
        });
      }
      expect(await counts()).toEqual(before);
    },
  );

  it("lets the owner's harness and a peer read the session", async () => {
    expect((await commands.getSession(GetSessionRequest.fromPartial({ sessionId: sessionA }), harnessA)).owner).toBe(
      "u1",
    );
    const page = await commands.readEvents(ReadEventsRequest.fromPartial({ sessionId: sessionA }), peer);
    expect(page.events.map((event) => event.type)).toEqual(["SessionCreated", "MessageSaved"]);
    // The scope travels with the session to every consumer of the event.
    expect(page.events[0]?.payload?.$case === "sessionCreated" && page.events[0].payload.value.scope).toBe("team-a");
  });

  it("creates sessions only for granted owners and workspaces", async () => {
    const create = (caller: Caller, owner: string, workspace: string) =>
      commands.createSession(CreateSessionRequest.fromPartial({ owner, workspace }), caller);
    const before = await counts();
    const owner = await failure(create(otherOwner, "u1", "/srv/a/y"));
    expect(owner).toBeInstanceOf(PermissionDeniedError);
    expect((owner as PermissionDeniedError).reason).toBe("owner_not_granted");
    for (const workspace of ["/srv/b/y", "/srv/a/../b/y", "/srv/ab", "relative/a"]) {
      const denied = await failure(create(harnessA, "u1", workspace));
      expect((denied as PermissionDeniedError).reason).toBe("workspace_not_granted");
    }
    expect(await counts()).toEqual(before);
    expect((await create(harnessA, "u1", "/srv/a")).seq).toBe(1);
  });

  it("inherits a summary and accepts a parent only within the same scope and owner", async () => {
    await commands.createSession(
      CreateSessionRequest.fromPartial({ sessionId: "full-a", owner: "u1", workspace: "/srv/a/x" }),
      harnessA,
    );
    const boundary = (await commands.saveMessage(saveMessageRequest("full-a", "long work"), harnessA)).messageId;
    await commands.commitCompaction(
      CommitCompactionRequest.fromPartial({
        sessionId: "full-a",
        boundaryMessageId: boundary,
        summary: "secret plan of team a",
      }),
      harnessA,
    );
    const continued = (caller: Caller, sessionId: string, workspace: string) =>
      commands.createSession(
        CreateSessionRequest.fromPartial({ sessionId, owner: "u1", workspace, continuedFromSessionId: "full-a" }),
        caller,
      );
    // Same owner name in another tenant: a normal session, no summary.
    const foreign = await continued(harnessB, "cont-b", "/srv/b/x");
    expect(foreign.session?.summary).toBe("");
    expect(foreign.session?.inheritedSummaryFrom).toBe("");
    const own = await continued(harnessA, "cont-a", "/srv/a/x");
    expect(own.session?.inheritedSummaryFrom).toBe("full-a");
    const parent = await failure(
      commands.createSession(
        CreateSessionRequest.fromPartial({ owner: "u1", workspace: "/srv/b/x", kind: 2, parentSessionId: "full-a" }),
        harnessB,
      ),
    );
    expect((parent as NotFoundError).reason).toBe("parent_not_found");
  });

  it("holds a principal to its session quota, counting live sessions only", async () => {
    const limited = as(principal("quota", { scope: "team-q", workspaces: ["*"], limits: { maxSessions: 2 } }));
    const create = () =>
      commands.createSession(CreateSessionRequest.fromPartial({ owner: "u1", workspace: "/q" }), limited);
    const first = await create();
    await create();
    const before = await counts();
    const over = await failure(create());
    expect(over).toBeInstanceOf(ResourceExhaustedError);
    expect((over as ResourceExhaustedError).reason).toBe("session_quota");
    expect((over as ResourceExhaustedError).context.retry_after_ms).toBeGreaterThan(0);
    expect(await counts()).toEqual(before);
    await commands.deleteSession(
      DeleteSessionRequest.fromPartial({ sessionId: first.session?.sessionId ?? "" }),
      limited,
    );
    expect((await create()).seq).toBe(1);
  });
});
