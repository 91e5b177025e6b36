import { NotFoundError, PermissionDeniedError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import {
  admitCaller,
  type Caller,
  canSeeSession,
  LOCAL_PRINCIPAL,
  type Principal,
  type PrincipalLimits,
  RequestRateLimiter,
  type Role,
  requireCreatableSession,
  requireVisibleSession,
  type SessionOwnership,
  workspaceAllowed,
} from "./index";

function principal(
  roles: readonly Role[],
  grants: { scope?: string; owners?: string[]; workspaces?: string[]; limits?: PrincipalLimits; name?: string } = {},
): Principal {
  return {
    name: grants.name ?? `p-${roles.join("-")}`,
    roles: new Set(roles),
    scope: grants.scope ?? "team-a",
    owners: grants.owners ?? ["*"],
    workspaces: grants.workspaces ?? ["/srv/a/"],
    limits: grants.limits ?? {},
  };
}

const harnessOf = (p: Principal): Caller => ({ principal: p, role: "harness" });

/** The thrown error, so a test can look at its reason and context rather than only its message. */
function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

describe("admitCaller", () => {
  it("admits a principal holding several allowed roles under the fleet role, not as a harness", () => {
    const both = principal(["harness", "operator"]);
    expect(admitCaller(both, ["harness", "operator"], "rebuildProjection").role).toBe("operator");
    // The order of `allowed` does not matter: the admission order does.
    expect(admitCaller(both, ["operator", "harness"], "rebuildProjection").role).toBe("operator");
    const peerAndHarness = principal(["harness", "peer"]);
    expect(admitCaller(peerAndHarness, ["harness", "peer"], "readEvents").role).toBe("peer");
    const sreAndHarness = principal(["harness", "sre"]);
    expect(admitCaller(sreAndHarness, ["sre", "harness"], "traceSession").role).toBe("sre");
  });

  it("admits under the only allowed role it holds, and keeps the principal", () => {
    const both = principal(["harness", "operator"]);
    const caller = admitCaller(both, ["harness"], "saveMessage");
    expect(caller.role).toBe("harness");
    expect(caller.principal).toBe(both);
  });

  it("denies a principal without an allowed role, naming the method, the principal and the roles", () => {
    const sre = principal(["sre"], { name: "sre-1" });
    const error = thrown(() => admitCaller(sre, ["harness", "peer"], "readEvents"));
    expect(error).toBeInstanceOf(PermissionDeniedError);
    const denied = error as PermissionDeniedError;
    expect(denied.reason).toBe("role_required");
    expect(denied.message).toBe("readEvents: principal sre-1 may not call it; it needs the role harness or peer");
    expect(denied.context).toEqual({ method: "readEvents", roles: "harness,peer" });
  });

  it("denies everyone when a method allows no role (deny by default), even the local principal", () => {
    const error = thrown(() => admitCaller(LOCAL_PRINCIPAL, [], "newMethod")) as PermissionDeniedError;
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error.message).toContain("no role may call it");
    expect(error.reason).toBe("role_required");
  });
});

describe("workspaceAllowed", () => {
  const a = principal(["harness"], { workspaces: ["/srv/a/", "/exact/ws"] });

  it("treats an entry ending in / as the directory and everything under it", () => {
    expect(workspaceAllowed(a, "/srv/a")).toBe(true);
    expect(workspaceAllowed(a, "/srv/a/")).toBe(true);
    expect(workspaceAllowed(a, "/srv/a/x")).toBe(true);
    expect(workspaceAllowed(a, "/srv/a/x/y")).toBe(true);
  });

  it("does not let a sibling that shares the text prefix pass as the directory", () => {
    expect(workspaceAllowed(a, "/srv/ab")).toBe(false);
    expect(workspaceAllowed(a, "/srv/a-other/x")).toBe(false);
    expect(workspaceAllowed(a, "/srv")).toBe(false);
  });

  it("refuses . and .. segments, so /srv/a/../b is not team a's", () => {
    expect(workspaceAllowed(a, "/srv/a/../b")).toBe(false);
    expect(workspaceAllowed(a, "/srv/a/x/../../b")).toBe(false);
    expect(workspaceAllowed(a, "/srv/a/./x")).toBe(false);
    expect(workspaceAllowed(a, "/srv/a/..")).toBe(false);
    // Dots inside a name are not segments.
    expect(workspaceAllowed(a, "/srv/a/..x/.y")).toBe(true);
  });

  it("matches an entry without a trailing / exactly", () => {
    expect(workspaceAllowed(a, "/exact/ws")).toBe(true);
    expect(workspaceAllowed(a, "/exact/ws/sub")).toBe(false);
    expect(workspaceAllowed(a, "/exact/wsx")).toBe(false);
  });

  it('allows any workspace with "*", and none with no entries', () => {
    expect(workspaceAllowed(principal(["harness"], { workspaces: ["*"] }), "/anything/at/all")).toBe(true);
    expect(workspaceAllowed(principal(["harness"], { workspaces: [] }), "/srv/a/x")).toBe(false);
  });
});

describe("canSeeSession and requireVisibleSession", () => {
  const a = principal(["harness", "sre"], { scope: "team-a", owners: ["alice"], workspaces: ["/srv/a/"] });
  const own: SessionOwnership = { scope: "team-a", owner: "alice", workspace: "/srv/a/x" };

  it("lets a harness see a session of its scope, owner and workspace", () => {
    expect(canSeeSession(harnessOf(a), own)).toBe(true);
  });

  it.each([
    ["another scope", { ...own, scope: "team-b" }],
    ["the empty scope (a local session)", { ...own, scope: "" }],
    ["an owner it was not granted", { ...own, owner: "mallory" }],
    ["a workspace outside its grant", { ...own, workspace: "/srv/b/x" }],
    ["a workspace that climbs out of its grant", { ...own, workspace: "/srv/a/../b" }],
  ])("hides from a harness a session of %s", (_label, session) => {
    expect(canSeeSession(harnessOf(a), session)).toBe(false);
  });

  it("lets a fleet role see every session, whatever its scope", () => {
    expect(canSeeSession({ principal: a, role: "sre" }, { scope: "team-z", owner: "z", workspace: "/z" })).toBe(true);
  });

  it("answers another tenant's session exactly like a missing one", () => {
    const caller = harnessOf(a);
    const hidden = thrown(() => requireVisibleSession(caller, { ...own, scope: "team-b" }, "s-1")) as NotFoundError;
    const missing = thrown(() => requireVisibleSession(caller, undefined, "s-1")) as NotFoundError;
    expect(hidden).toBeInstanceOf(NotFoundError);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect([hidden.message, hidden.reason, hidden.context]).toEqual([missing.message, missing.reason, missing.context]);
    expect(hidden.reason).toBe("session_not_found");
  });

  it("returns the session itself when visible", () => {
    expect(requireVisibleSession(harnessOf(a), own, "s-1")).toBe(own);
  });
});

describe("requireCreatableSession", () => {
  const a = principal(["harness", "operator"], { owners: ["alice"], workspaces: ["/srv/a/"] });

  it("refuses an owner the harness was not granted, naming the field", () => {
    const error = thrown(() => requireCreatableSession(harnessOf(a), "mallory", "/srv/a/x")) as PermissionDeniedError;
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error.reason).toBe("owner_not_granted");
    expect(error.context.field).toBe("owner");
    expect(error.message).not.toContain("mallory");
  });

  it("refuses a workspace outside the grant, naming the field", () => {
    const error = thrown(() => requireCreatableSession(harnessOf(a), "alice", "/srv/b/x")) as PermissionDeniedError;
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error.reason).toBe("workspace_not_granted");
    expect(error.context.field).toBe("workspace");
    expect(error.message).not.toContain("/srv/b/x");
  });

  it("accepts a granted owner and workspace, and does not confine a fleet role", () => {
    expect(() => requireCreatableSession(harnessOf(a), "alice", "/srv/a/x")).not.toThrow();
    expect(() => requireCreatableSession({ principal: a, role: "operator" }, "mallory", "/srv/b/x")).not.toThrow();
  });
});

describe("RequestRateLimiter (fake clock)", () => {
  const limited = (limits: PrincipalLimits, name = "limited") => principal(["harness"], { name, limits });

  /** How many of `n` calls at the same instant are allowed. */
  function allowedOf(limiter: RequestRateLimiter, p: Principal, n: number, nowMs: number): number {
    let allowed = 0;
    for (let i = 0; i < n; i++) if (limiter.take(p, nowMs).allowed) allowed += 1;
    return allowed;
  }

  it("never limits a principal without a rate", () => {
    const limiter = new RequestRateLimiter();
    expect(allowedOf(limiter, limited({}), 10_000, 0)).toBe(10_000);
  });

  it("allows exactly `burst` calls at once, then refuses", () => {
    const limiter = new RequestRateLimiter();
    expect(allowedOf(limiter, limited({ requestsPerSecond: 10, burst: 25 }), 100, 1_000)).toBe(25);
  });

  it("uses the rate as the burst when none is given, and at least 1", () => {
    expect(allowedOf(new RequestRateLimiter(), limited({ requestsPerSecond: 7 }), 100, 0)).toBe(7);
    expect(allowedOf(new RequestRateLimiter(), limited({ requestsPerSecond: 0.5 }), 100, 0)).toBe(1);
  });

  it("refills at the rate, never beyond the burst", () => {
    const limiter = new RequestRateLimiter();
    const p = limited({ requestsPerSecond: 4, burst: 2 });
    expect(allowedOf(limiter, p, 10, 0)).toBe(2);
    // 4/s: one token every 250 ms.
    expect(allowedOf(limiter, p, 10, 249)).toBe(0);
    expect(allowedOf(limiter, p, 10, 250)).toBe(1);
    expect(allowedOf(limiter, p, 10, 750)).toBe(2);
    // An hour idle fills the bucket to its burst, not to 14,400.
    expect(allowedOf(limiter, p, 100, 3_600_750)).toBe(2);
  });

  it("says how long until the next token", () => {
    const limiter = new RequestRateLimiter();
    const p = limited({ requestsPerSecond: 2, burst: 1 });
    expect(limiter.take(p, 0)).toEqual({ allowed: true });
    expect(limiter.take(p, 0)).toEqual({ allowed: false, retryAfterMs: 500 });
    // 200 ms later 0.4 of a token has come back: 300 ms to go.
    expect(limiter.take(p, 200)).toEqual({ allowed: false, retryAfterMs: 300 });
    expect(limiter.take(p, 500)).toEqual({ allowed: true });
  });

  it("rounds the wait up, so a client that waits retryAfterMs is admitted", () => {
    const limiter = new RequestRateLimiter();
    const p = limited({ requestsPerSecond: 3, burst: 1 });
    limiter.take(p, 0);
    const refused = limiter.take(p, 0);
    if (refused.allowed) throw new Error("expected a refusal");
    expect(refused.retryAfterMs).toBe(334);
    expect(limiter.take(p, refused.retryAfterMs).allowed).toBe(true);
  });

  it("keeps one bucket per principal", () => {
    const limiter = new RequestRateLimiter();
    const one = limited({ requestsPerSecond: 1, burst: 1 }, "one");
    const two = limited({ requestsPerSecond: 1, burst: 1 }, "two");
    expect(allowedOf(limiter, one, 5, 0)).toBe(1);
    expect(allowedOf(limiter, two, 5, 0)).toBe(1);
  });

  it("forgets principals no longer named (a reload), keeping the others' buckets", () => {
    const limiter = new RequestRateLimiter();
    const gone = limited({ requestsPerSecond: 1, burst: 1 }, "gone");
    const kept = limited({ requestsPerSecond: 1, burst: 1 }, "kept");
    allowedOf(limiter, gone, 1, 0);
    allowedOf(limiter, kept, 1, 0);
    limiter.retain(new Set(["kept"]));
    expect(allowedOf(limiter, gone, 5, 0)).toBe(1);
    expect(allowedOf(limiter, kept, 5, 0)).toBe(0);
  });
});
