// Payloads of topic rules.snapshot.v1 and the envelope `type` for each (the payload message name,
// as session.events.v1 does).

import type { DeletionReason, InvalidationReason, PinnedSnapshot, PinReason, RulesEventPayload } from "./model";

export const RULES_EVENT_SCHEMA_VERSION = 1;

const TYPE_NAMES: Record<RulesEventPayload["$case"], string> = {
  pinned: "RulesPinned",
  retainedChanged: "RulesRetainedChanged",
  retainedEmpty: "RulesRetainedEmpty",
  invalidated: "RulesInvalidated",
  deleted: "RulesDeleted",
};

export function rulesEventType(payload: RulesEventPayload): string {
  return TYPE_NAMES[payload.$case];
}

export function pinnedPayload(snapshot: PinnedSnapshot, reason: PinReason): RulesEventPayload {
  return {
    $case: "pinned",
    value: {
      workspace: snapshot.workspace,
      rulesHash: snapshot.rulesHash,
      chars: snapshot.rulesText.length,
      sourcePath: snapshot.sourcePath ?? "",
      sourceMtimeMs: snapshot.sourceMtimeMs ?? 0,
      generation: snapshot.generation,
      reason,
    },
  };
}

export function retainedChangedPayload(diskHash: string, pinnedHash: string): RulesEventPayload {
  return { $case: "retainedChanged", value: { diskHash, pinnedHash } };
}

export function retainedEmptyPayload(pinnedHash: string): RulesEventPayload {
  return { $case: "retainedEmpty", value: { pinnedHash } };
}

/** `generation`: the compaction generation in effect when the snapshot was dropped. */
export function invalidatedPayload(reason: InvalidationReason, generation: number): RulesEventPayload {
  return { $case: "invalidated", value: { reason, generation } };
}

export function deletedPayload(reason: DeletionReason): RulesEventPayload {
  return { $case: "deleted", value: { reason } };
}
