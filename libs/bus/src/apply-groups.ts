// Group commit for a consumer's applies (docs/decisions/consumer-apply-groups.md). kafkajs hands a
// consumer one batch per partition, and with partitions consumed side by side each batch used to be
// its own unit of work: its own transaction, its own statements and its own fsync, a few events
// each under load. Batches handed over together are applied here as one unit instead.
//
// A batch arriving while no group is in flight starts one on the next turn of the event loop
// (setImmediate), with whatever else arrived in that turn; batches arriving while a group is in
// flight (kafkajs hands a fetch's partitions over a few milliseconds apart, and a transaction takes
// longer) wait and go together in the next one. Nothing waits on a timer, so a quiet consumer
// applies each batch as soon as it comes.
//
// A group that fails is applied again batch by batch, each alone, before anyone is told: so one
// partition's bad event or one batch's conflict is reported only to that batch, which then retries
// or dead-letters exactly as it did when it was applied alone. Per-partition order holds because
// kafkajs hands a partition's next batch only after the previous one's apply has settled.

interface Member<T> {
  readonly items: readonly T[];
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

export class ApplyGroups<T> {
  private queued: Member<T>[] = [];
  private inFlight = false;
  private scheduled = false;

  constructor(
    private readonly applyMany: (items: readonly T[]) => Promise<void>,
    /** Items per group at most; a single batch larger than this is still applied, alone. */
    private readonly maxItems: number,
  ) {
    if (!Number.isInteger(maxItems) || maxItems < 1) throw new Error("maxItems must be an integer >= 1");
  }

  apply(items: readonly T[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ items, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.inFlight || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.inFlight = true;
    try {
      while (this.queued.length > 0) await this.applyGroup(this.takeGroup());
    } finally {
      this.inFlight = false;
    }
  }

  private async applyGroup(group: readonly Member<T>[]): Promise<void> {
    try {
      await this.applyMany(group.flatMap((member) => member.items));
    } catch (error) {
      if (group.length === 1) {
        group[0]?.reject(error);
        return;
      }
      // Found out whose it was: each batch alone, in the order they arrived.
      for (const member of group) await this.applyGroup([member]);
      return;
    }
    for (const member of group) member.resolve();
  }

  /** The longest-waiting batches whose items fit in maxItems together (always at least one). */
  private takeGroup(): Member<T>[] {
    let count = 0;
    let taken = 0;
    for (const member of this.queued) {
      if (taken > 0 && count + member.items.length > this.maxItems) break;
      count += member.items.length;
      taken += 1;
    }
    return this.queued.splice(0, taken);
  }
}
