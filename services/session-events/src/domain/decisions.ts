import { ConflictError, FailedPreconditionError, NotFoundError, ResourceExhaustedError } from "@prefix-guard/errors";
import type { SessionLimits } from "./limits";
import type { MessageState, SessionState } from "./model";
import { serializedSessionBytesAfter } from "./stored-content";

/** A session that accepts messages, deletions and compactions: exists, not deleted, not ended. */
export function requireWritableSession(session: SessionState | undefined, sessionId: string): SessionState {
  const live = requireLiveSession(session, sessionId);
  if (live.ended) {
    throw new FailedPreconditionError(
      `session ${sessionId} is an ended side task (promoted); it accepts no more writes`,
      {
        reason: "session_ended",
        context: { session_id: sessionId },
      },
    );
  }
  return live;
}

/** Exists and is not deleted; ended side tasks still count (they may be deleted). */
export function requireLiveSession(session: SessionState | undefined, sessionId: string): SessionState {
  if (session === undefined) {
    throw new NotFoundError(`session ${sessionId} not found`, {
      reason: "session_not_found",
      context: { session_id: sessionId },
    });
  }
  if (session.deleted) {
    throw new NotFoundError(`session ${sessionId} is deleted`, {
      reason: "session_deleted",
      context: { session_id: sessionId },
    });
  }
  return session;
}

/** Optimistic concurrency: a write that names the seq it was based on loses when the session moved on. */
export function checkExpectedSeq(expectedSeq: number | undefined, lastSeq: number): void {
  if (expectedSeq !== undefined && expectedSeq !== lastSeq) {
    throw new ConflictError(`expected seq ${expectedSeq} but the session is at seq ${lastSeq}`, {
      reason: "seq_mismatch",
      context: { expected_seq: expectedSeq, last_seq: lastSeq },
    });
  }
}

export interface SessionUsage {
  readonly contentChars: number;
  readonly serializedBytes: number;
}

/**
 * The session's usage after storing one more message, or ResourceExhaustedError("session_full")
 * when it would pass the character quota or the physical byte cap. Reaching a limit exactly is allowed.
 */
export function decideMessageCapacity(
  usage: SessionUsage,
  message: { readonly contentChars: number; readonly serializedBytes: number },
  limits: SessionLimits,
): SessionUsage {
  const contentChars = usage.contentChars + message.contentChars;
  if (contentChars > limits.characterQuota) {
    throw new ResourceExhaustedError(
      `session is full: ${usage.contentChars} + ${message.contentChars} content characters exceed the quota of ${limits.characterQuota}`,
      {
        reason: "session_full",
        context: { limit: "character_quota", quota: limits.characterQuota, used: usage.contentChars },
      },
    );
  }
  const serializedBytes = serializedSessionBytesAfter(usage.serializedBytes, message.serializedBytes);
  if (serializedBytes > limits.maxSerializedSessionBytes) {
    throw new ResourceExhaustedError(
      `session is full: the serialized session would be ${serializedBytes} bytes, over the cap of ${limits.maxSerializedSessionBytes}`,
      {
        reason: "session_full",
        context: { limit: "serialized_bytes", cap: limits.maxSerializedSessionBytes, used: usage.serializedBytes },
      },
    );
  }
  return { contentChars, serializedBytes };
}

/** The message to delete: it must belong to the session and still be visible. */
export function requireDeletableMessage(
  message: MessageState | undefined,
  sessionId: string,
  messageId: string,
): MessageState {
  if (message === undefined || message.sessionId !== sessionId || message.deleted) {
    throw new NotFoundError(`message ${messageId} not found in session ${sessionId}`, {
      reason: "message_not_found",
      context: { session_id: sessionId, message_id: messageId },
    });
  }
  return message;
}

/**
 * Compare-and-set on the compaction generation: the commit wins only if nobody compacted since the
 * caller read the session. The boundary must be a live message of this session and must not move
 * behind the current boundary (messages before it are already replaced by the summary).
 */
export function decideCompaction(args: {
  readonly session: SessionState;
  readonly expectedGeneration: number;
  readonly boundaryMessageId: string;
  readonly boundary: MessageState | undefined;
  readonly currentBoundary: MessageState | undefined;
}): { readonly generation: number } {
  const { session, expectedGeneration, boundary, boundaryMessageId } = args;
  if (expectedGeneration !== session.compactionGeneration) {
    throw new ConflictError(
      `compaction expected generation ${expectedGeneration} but the session is at generation ${session.compactionGeneration}`,
      {
        reason: "generation_mismatch",
        context: { expected_generation: expectedGeneration, generation: session.compactionGeneration },
      },
    );
  }
  if (boundary === undefined || boundary.sessionId !== session.sessionId) {
    throw new NotFoundError(`boundary message ${boundaryMessageId} not found in session ${session.sessionId}`, {
      reason: "boundary_not_found",
      context: { field: "boundary_message_id", message_id: boundaryMessageId },
    });
  }
  if (boundary.deleted) {
    throw new FailedPreconditionError(`boundary message ${boundaryMessageId} is deleted`, {
      reason: "boundary_deleted",
      context: { field: "boundary_message_id", message_id: boundaryMessageId },
    });
  }
  if (args.currentBoundary !== undefined && boundary.seq < args.currentBoundary.seq) {
    throw new FailedPreconditionError(
      `boundary message ${boundaryMessageId} (seq ${boundary.seq}) is before the current boundary (seq ${args.currentBoundary.seq})`,
      { reason: "boundary_moved_back", context: { field: "boundary_message_id", message_id: boundaryMessageId } },
    );
  }
  return { generation: session.compactionGeneration + 1 };
}

/** Only a live side task can be promoted, and only once. */
export function requirePromotableSideTask(session: SessionState | undefined, sessionId: string): SessionState {
  const live = requireLiveSession(session, sessionId);
  if (live.kind !== "side") {
    throw new FailedPreconditionError(`session ${sessionId} is not a side task`, {
      reason: "not_side_task",
      context: { session_id: sessionId },
    });
  }
  if (live.ended) {
    throw new FailedPreconditionError(`side task ${sessionId} is already promoted`, {
      reason: "session_ended",
      context: { session_id: sessionId },
    });
  }
  return live;
}

export interface InheritedSummary {
  readonly from: string;
  readonly summary: string;
}

/**
 * Seed 002 §5.3: a new session continuing a full one silently inherits the source's summary, but
 * only when the source exists, is not deleted, belongs to the same owner and has a summary.
 * Anything else yields a normal session: no error, nothing that reveals whether the source exists.
 */
export function decideInheritance(
  source: SessionState | undefined,
  owner: { readonly owner: string; readonly scope: string },
): InheritedSummary | undefined {
  if (
    source === undefined ||
    source.deleted ||
    source.owner !== owner.owner ||
    source.scope !== owner.scope ||
    source.summary.length === 0
  )
    return undefined;
  return { from: source.sessionId, summary: source.summary };
}

/**
 * A side task's parent: a live session of the same owner in the same scope (another owner's or
 * another tenant's session reads as missing).
 */
export function requireParentSession(
  parent: SessionState | undefined,
  parentSessionId: string,
  owner: { readonly owner: string; readonly scope: string },
): SessionState {
  if (parent === undefined || parent.deleted || parent.owner !== owner.owner || parent.scope !== owner.scope) {
    throw new NotFoundError(`parent session ${parentSessionId} not found`, {
      reason: "parent_not_found",
      context: { field: "parent_session_id", session_id: parentSessionId },
    });
  }
  return parent;
}
