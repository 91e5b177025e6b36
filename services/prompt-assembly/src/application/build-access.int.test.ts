// A build answers only the session's own tenant, and Resolve (which pins rules into the session)
// goes out only for a session the caller may see: another tenant can neither read a body nor plant
// rules, whether or not this process already holds the session's view.

import { type Caller, LOCAL_HARNESS, type Principal, type Role } from "@prefix-guard/access";
import { NotFoundError, PermissionDeniedError } from "@prefix-guard/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assemblyCore,
  FakeRulesSnapshot,
  FakeSessionEvents,
  FixedClock,
  harnessRequest,
  openSqliteStore,
  outboxPrefixEvents,
  RecordingLogger,
  shanghai,
  type TestStore,
} from "../../test/application-fixtures";

const foreign: Caller = {
  role: "harness",
  principal: {
    name: "harness-b",
    roles: new Set<Role>(["harness"]),
    scope: "team-b",
    owners: ["*"],
    workspaces: ["*"],
    limits: {},
  } satisfies Principal,
};

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the build to fail");
}

describe("BuildRequest by principal (SQLite)", () => {
  let store: TestStore;
  const events = new FakeSessionEvents();
  const rules = new FakeRulesSnapshot();
  let core: ReturnType<typeof assemblyCore>;

  beforeAll(async () => {
    store = await openSqliteStore("build-access");
    core = assemblyCore({
      db: store.db,
      rules,
      sessions: events,
      now: new FixedClock(shanghai("2026-10-12", "10:00")).now,
      logger: new RecordingLogger(),
    });
    rules.disk = "owner's rules";
    // The fixture's sessions belong to owner-1 in the empty scope: the local principal's.
    await events.createSession("s1", { atMs: shanghai("2026-10-12", "09:00") });
    await events.saveMessage("s1", { atMs: shanghai("2026-10-12", "09:01"), role: "user", content: "你好" });
  });
  afterAll(async () => store.close());

  it("answers another tenant as if the session did not exist, with no Resolve, before and after the view is held", async () => {
    const missing = await failure(core.builder.buildRequest(harnessRequest("no-such-session"), foreign));
    const resolvesBefore = rules.calls.length;
    const cold = await failure(core.builder.buildRequest(harnessRequest("s1"), foreign));
    expect(cold).toBeInstanceOf(NotFoundError);
    expect((cold as NotFoundError).reason).toBe("session_not_found");
    expect(cold.message.replace("s1", "ID")).toBe(missing.message.replace("no-such-session", "ID"));
    expect(rules.calls.length).toBe(resolvesBefore);

    const built = await core.builder.buildRequest(harnessRequest("s1"), LOCAL_HARNESS);
    expect(built.bodyJson).toContain("owner's rules");
    const afterOwner = rules.calls.length;
    // The view is now held in memory: the early Resolve must still not go out for a foreign caller.
    expect(core.views.peek("s1")).toBeDefined();
    rules.disk = "planted by team b";
    const warm = await failure(core.builder.buildRequest(harnessRequest("s1", { minSeq: 2 }), foreign));
    expect((warm as NotFoundError).reason).toBe("session_not_found");
    expect(rules.calls.length).toBe(afterOwner);
    rules.disk = "owner's rules";
  });

  it("refuses a rules workspace the harness was not granted, before any Resolve", async () => {
    const narrow: Caller = {
      role: "harness",
      principal: { ...foreign.principal, scope: "", workspaces: ["/ws/other/"] },
    };
    const before = rules.calls.length;
    const denied = await failure(core.builder.buildRequest(harnessRequest("s1", { workspace: "/etc" }), narrow));
    expect(denied).toBeInstanceOf(PermissionDeniedError);
    expect((denied as PermissionDeniedError).reason).toBe("workspace_not_granted");
    expect(rules.calls.length).toBe(before);
  });

  it("tells cache-monitor whose session each build was", async () => {
    const observed = (await outboxPrefixEvents(store.db, "s1")).filter((event) => event.payload?.$case === "observed");
    expect(observed.length).toBeGreaterThan(0);
    for (const event of observed)
      if (event.payload?.$case === "observed")
        expect([event.payload.value.scope, event.payload.value.owner]).toEqual(["", "owner-1"]);
  });
});
