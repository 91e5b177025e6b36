// Where a forwarded request broke the prefix, as the gateway names it: the first changed block of
// the request's cut into cache order, and the byte where it diverged from the session's previous
// request. Shown beside the changed sections by `collapses` and `trace`, and in their --json.

import type { ChangedBlock } from "@prefix-guard/proto/events/v1/prefix_events";
import { formatCount } from "./numbers";

/** What a collapse or a build says of its request's first changed block (CacheCollapsed, BuildTrace). */
export interface BlockFacts {
  readonly source?: string | undefined;
  readonly firstChangedBlock?: ChangedBlock | undefined;
  readonly divergedOffset?: number | undefined;
}

/** "block 1 system @ byte 7,950"; "" when nothing names a block (our builds). */
export function changedBlockText(facts: BlockFacts): string {
  const block = facts.firstChangedBlock;
  const at = facts.divergedOffset === undefined ? "" : `@ byte ${formatCount(facts.divergedOffset)}`;
  if (block === undefined) return at;
  const role = block.role !== "" && block.role !== block.kind ? `/${block.role}` : "";
  return [`block ${block.index} ${block.kind}${role}`, at].filter((part) => part !== "").join(" ");
}

/** The CHANGED cell: the sections (or what moved), then the block and byte when the gateway named them. */
export function withChangedBlock(changed: string, facts: BlockFacts): string {
  const block = changedBlockText(facts);
  return block === "" ? changed : `${changed} (${block})`;
}

/** "prompt-assembly" for our builds (also when a record predates the field), else the source named. */
export function sourceOf(facts: BlockFacts): string {
  return facts.source === undefined || facts.source === "" ? "prompt-assembly" : facts.source;
}

/** The --json fields, snake_case like the proto's. */
export function changedBlockJson(facts: BlockFacts) {
  const block = facts.firstChangedBlock;
  return {
    source: sourceOf(facts),
    first_changed_block: block === undefined ? null : { index: block.index, kind: block.kind, role: block.role },
    diverged_offset: facts.divergedOffset ?? null,
  };
}
