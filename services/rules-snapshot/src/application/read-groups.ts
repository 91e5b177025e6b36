// Group reads for Resolve (docs/decisions/resolve-read-groups.md), as session-events groups its
// writes: a read asked while none of its lane is in flight starts at once, alone; reads asked while
// one is in flight wait and go together in the next, one round trip (a query, a file check) for the
// whole group. Under load a lane answers
// many callers per round trip; a quiet caller pays no wait.
//
// No answer is staler than an ungrouped read would be: a group starts only after every read in it
// was asked, so each caller sees what the source held at some moment after its call. That is why a
// caller never joins a read already in flight (it may have started before the caller's own write
// committed), only the next one.
//
// Lanes: a group holds the keys of one lane only. One lane for every key batches a query by
// primary keys; a lane per key makes a file check single-flight per file without letting a slow
// file hold up another's.

/** Reads many keys in one go; a key missing from the map reads as `undefined`. */
export type ReadMany<K, V> = (keys: readonly K[]) => Promise<ReadonlyMap<K, V>>;

interface Waiter<V> {
  readonly resolve: (value: V | undefined) => void;
  readonly reject: (error: unknown) => void;
}

interface Lane<K, V> {
  /** Keys asked since the group in flight started, each with everyone who asked it. */
  queued: Map<K, Waiter<V>[]>;
  inFlight: boolean;
}

export class ReadGroups<K, V, L = K> {
  private readonly lanes = new Map<L, Lane<K, V>>();

  constructor(
    private readonly readMany: ReadMany<K, V>,
    private readonly laneOf: (key: K) => L,
    /** Keys per group at most; the rest wait for the next. */
    private readonly maxGroup: number,
  ) {
    if (!Number.isInteger(maxGroup) || maxGroup < 1) throw new Error("maxGroup must be an integer >= 1");
  }

  read(key: K): Promise<V | undefined> {
    return new Promise<V | undefined>((resolve, reject) => {
      const name = this.laneOf(key);
      let lane = this.lanes.get(name);
      if (lane === undefined) {
        lane = { queued: new Map(), inFlight: false };
        this.lanes.set(name, lane);
      }
      const waiters = lane.queued.get(key);
      if (waiters === undefined) lane.queued.set(key, [{ resolve, reject }]);
      else waiters.push({ resolve, reject });
      if (!lane.inFlight) void this.drain(name, lane);
    });
  }

  private async drain(name: L, lane: Lane<K, V>): Promise<void> {
    lane.inFlight = true;
    while (lane.queued.size > 0) {
      const group = takeGroup(lane.queued, this.maxGroup);
      let values: ReadonlyMap<K, V>;
      try {
        values = await this.readMany([...group.keys()]);
      } catch (error) {
        for (const waiters of group.values()) for (const waiter of waiters) waiter.reject(error);
        continue;
      }
      for (const [key, waiters] of group) for (const waiter of waiters) waiter.resolve(values.get(key));
    }
    lane.inFlight = false;
    // An idle lane is forgotten: a lane per key must not outlive its reads.
    this.lanes.delete(name);
  }
}

/** The first `max` keys of the queue, removed from it (insertion order: the longest waiting first). */
function takeGroup<K, W>(queued: Map<K, W>, max: number): Map<K, W> {
  if (queued.size <= max) {
    const all = new Map(queued);
    queued.clear();
    return all;
  }
  const group = new Map<K, W>();
  for (const [key, waiters] of queued) {
    if (group.size === max) break;
    group.set(key, waiters);
    queued.delete(key);
  }
  return group;
}
