// Who may do what: principals, their roles, and which sessions a caller may see. Pure (no I/O), so
// every service's application layer asks the same questions the same way; authentication (tokens,
// certificates, the principals file) lives in libs/grpc.

import { NotFoundError, PermissionDeniedError } from "@prefix-guard/errors";

export const ROLES = ["harness", "peer", "operator", "sre", "subscriber"] as const;
export type Role = (typeof ROLES)[number];

import type { PrincipalLimits } from "./rate-limiter";

export type { PrincipalLimits };

export interface Principal {
  readonly name: string;
  readonly roles: ReadonlySet<Role>;
  /** The tenant: every session a harness creates carries it, and a harness sees only its own scope. */
  readonly scope: string;
  /** Owners a harness may create and use sessions for: exact names, or "*" for any. */
  readonly owners: readonly string[];
  /** Workspaces likewise: an exact path, a directory prefix ending in "/", or "*" for any. */
  readonly workspaces: readonly string[];
  readonly limits: PrincipalLimits;
}

/** A principal, and the role under which this one call was admitted. */
export interface Caller {
  readonly principal: Principal;
  readonly role: Role;
}

/** What a session's visibility depends on; fixed at CreateSession, never changed afterwards. */
export interface SessionOwnership {
  readonly scope: string;
  readonly owner: string;
  readonly workspace: string;
}

/**
 * The principal of a server that runs without a principals file: on loopback (`make run`, a
 * developer's machine) or with the explicit development opt-out. It holds every role, in the
 * empty scope, so a single local user sees what they created.
 */
export const LOCAL_PRINCIPAL: Principal = Object.freeze({
  name: "local",
  roles: new Set<Role>(ROLES),
  scope: "",
  owners: ["*"],
  workspaces: ["*"],
  limits: {},
});

/**
 * Fleet roles come first: a principal that is both an operator and a harness is admitted to
 * RebuildProjection as the operator, and to a session RPC that allows both under the wider role.
 */
const ADMISSION_ORDER: readonly Role[] = ["peer", "operator", "sre", "subscriber", "harness"];

/**
 * The role under which `principal` may make a call allowed to `allowed`; PERMISSION_DENIED naming
 * the roles otherwise. An empty `allowed` denies everyone (deny by default).
 */
export function admitCaller(principal: Principal, allowed: readonly Role[], method: string): Caller {
  for (const role of ADMISSION_ORDER) {
    if (allowed.includes(role) && principal.roles.has(role)) return { principal, role };
  }
  const needed = allowed.length === 0 ? "no role may call it" : `it needs the role ${allowed.join(" or ")}`;
  throw new PermissionDeniedError(`${method}: principal ${principal.name} may not call it; ${needed}`, {
    reason: "role_required",
    context: { method, roles: allowed.join(",") },
  });
}

/** Whether a harness may name `owner` (exact match or "*"). */
export function ownerAllowed(principal: Principal, owner: string): boolean {
  return principal.owners.some((entry) => entry === "*" || entry === owner);
}

/**
 * Whether a harness may use `workspace`. A prefix entry ("/srv/team-a/") covers the directory and
 * everything under it; a workspace with "." or ".." segments matches nothing, so "/srv/team-a/../b"
 * cannot pass as team-a's.
 */
export function workspaceAllowed(principal: Principal, workspace: string): boolean {
  if (principal.workspaces.includes("*")) return true;
  if (hasDotSegment(workspace)) return false;
  return principal.workspaces.some((entry) =>
    entry.endsWith("/") ? workspace === entry.slice(0, -1) || workspace.startsWith(entry) : workspace === entry,
  );
}

function hasDotSegment(path: string): boolean {
  for (const segment of path.split("/")) if (segment === "." || segment === "..") return true;
  return false;
}

/** True when the call is confined to its principal's own sessions (a harness); fleet roles see all. */
export function isConfined(caller: Caller): boolean {
  return caller.role === "harness";
}

/** Whether `caller` may see a session with this ownership. */
export function canSeeSession(caller: Caller, session: SessionOwnership): boolean {
  if (!isConfined(caller)) return true;
  const { principal } = caller;
  return (
    session.scope === principal.scope &&
    ownerAllowed(principal, session.owner) &&
    workspaceAllowed(principal, session.workspace)
  );
}

/**
 * The session, when `caller` may see it. Another tenant's session answers exactly like a missing
 * one (same code, reason and message), so a harness cannot probe which ids exist elsewhere.
 */
export function requireVisibleSession<S extends SessionOwnership>(
  caller: Caller,
  session: S | undefined,
  sessionId: string,
): S {
  if (session === undefined || !canSeeSession(caller, session)) throw sessionNotFound(sessionId);
  return session;
}

export function sessionNotFound(sessionId: string): NotFoundError {
  return new NotFoundError(`session ${sessionId} not found`, {
    reason: "session_not_found",
    context: { session_id: sessionId },
  });
}

/**
 * What a harness may create: an owner and a workspace its principal names. PERMISSION_DENIED (not
 * NOT_FOUND): nothing exists yet to hide, and the harness needs to know its grant is too narrow.
 */
export function requireCreatableSession(caller: Caller, owner: string, workspace: string): void {
  if (!isConfined(caller)) return;
  const { principal } = caller;
  if (!ownerAllowed(principal, owner))
    throw new PermissionDeniedError(`owner: principal ${principal.name} may not create sessions for this owner`, {
      reason: "owner_not_granted",
      context: { field: "owner" },
    });
  if (!workspaceAllowed(principal, workspace))
    throw new PermissionDeniedError(`workspace: principal ${principal.name} may not use this workspace`, {
      reason: "workspace_not_granted",
      context: { field: "workspace" },
    });
}

export { type RateDecision, RequestRateLimiter } from "./rate-limiter";

/** The local principal calling as a harness: what tests and in-process callers of a use case pass. */
export const LOCAL_HARNESS: Caller = Object.freeze({ principal: LOCAL_PRINCIPAL, role: "harness" });
