// Group commit for SaveMessage. Messages saved while a group is being written wait and go
// together in the next one: one transaction, two round trips and one commit for the whole group
// instead of each (adapters/mysql/message-append.ts). A message saved when nothing is in flight is
// written at once, alone, so a quiet session pays no wait.
//
// A message refused by its own decision (a quota, an expected_seq) is refused alone. A database
// error rolls the whole group back; every message is then written again on its own, so each gets
// the answer it would have had without grouping (and the caller's retry rules apply to it alone).

import type { AppendOutcome, DecideAppend } from "./ports";

export interface GroupAppendStore {
  appendMessages<T>(group: readonly { sessionId: string; decide: DecideAppend<T> }[]): Promise<AppendOutcome<T>[]>;
}

interface Pending {
  readonly sessionId: string;
  readonly decide: DecideAppend<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

export class MessageAppendGroups {
  private readonly queue: Pending[] = [];
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly store: GroupAppendStore,
    private readonly maxGroup: number,
  ) {
    if (!Number.isInteger(maxGroup) || maxGroup < 1) throw new Error("maxGroup must be an integer >= 1");
  }

  append<T>(sessionId: string, decide: DecideAppend<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ sessionId, decide, resolve: resolve as (value: unknown) => void, reject });
      this.flushing ??= this.drain();
    });
  }

  /** Resolves once every message queued so far is written or refused. */
  async idle(): Promise<void> {
    while (this.flushing !== null) await this.flushing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) await this.appendGroup(this.queue.splice(0, this.maxGroup));
    } finally {
      this.flushing = null;
    }
  }

  private async appendGroup(group: readonly Pending[]): Promise<void> {
    let outcomes: AppendOutcome<unknown>[];
    try {
      outcomes = await this.store.appendMessages(group);
    } catch (error) {
      if (group.length === 1) {
        group[0]?.reject(error);
        return;
      }
      for (const pending of group) await this.appendGroup([pending]);
      return;
    }
    group.forEach((pending, index) => {
      const outcome = outcomes[index];
      if (outcome === undefined) pending.reject(new Error("no outcome for a message of the group"));
      else if (outcome.ok) pending.resolve(outcome.value);
      else pending.reject(outcome.error);
    });
  }
}
