import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";

/** Roles as stored in the `message.role` column. */
export type MessageRole = "user" | "assistant" | "tool" | "system";
/** Kinds as stored in the `session.kind` column. */
export type SessionKindName = "main" | "side" | "embed";

const roleNames = new Map<Role, MessageRole>([
  [Role.ROLE_USER, "user"],
  [Role.ROLE_ASSISTANT, "assistant"],
  [Role.ROLE_TOOL, "tool"],
  [Role.ROLE_SYSTEM, "system"],
]);

const kindNames = new Map<SessionKind, SessionKindName>([
  [SessionKind.SESSION_KIND_MAIN, "main"],
  [SessionKind.SESSION_KIND_SIDE, "side"],
  [SessionKind.SESSION_KIND_EMBED, "embed"],
]);

/** undefined for ROLE_UNSPECIFIED, UNRECOGNIZED and numbers this version does not know. */
export function roleName(role: Role): MessageRole | undefined {
  return roleNames.get(role);
}

export function roleFromName(name: string): Role {
  for (const [role, roleAsName] of roleNames) if (roleAsName === name) return role;
  throw new Error(`unknown stored role ${JSON.stringify(name)}`);
}

/** undefined for UNSPECIFIED, UNRECOGNIZED and unknown numbers (callers apply the MAIN default first). */
export function kindName(kind: SessionKind): SessionKindName | undefined {
  return kindNames.get(kind);
}

export function kindFromName(name: string): SessionKind {
  for (const [kind, kindAsName] of kindNames) if (kindAsName === name) return kind;
  throw new Error(`unknown stored session kind ${JSON.stringify(name)}`);
}

/** What the write decisions need to know about a session, read (and locked) inside the write transaction. */
export interface SessionState {
  readonly sessionId: string;
  readonly owner: string;
  /** The creating principal's scope (tenant); with owner and workspace, who may see the session. */
  readonly scope: string;
  readonly workspace: string;
  readonly kind: SessionKindName;
  readonly parentSessionId: string | undefined;
  readonly timezone: string;
  readonly lastSeq: number;
  readonly compactionGeneration: number;
  readonly compactionBoundaryMessageId: string | undefined;
  readonly summary: string;
  readonly contentChars: number;
  readonly serializedBytes: number;
  readonly deleted: boolean;
  readonly ended: boolean;
  /** occurred_at_ms of its newest event: the activity the retention sweep measures idleness by. */
  readonly lastEventAtMs: number;
}

/** A stored message as the write decisions see it. */
export interface MessageState {
  readonly messageId: string;
  readonly sessionId: string;
  readonly seq: number;
  readonly contentChars: number;
  readonly deleted: boolean;
}
