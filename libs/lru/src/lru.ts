// A map bounded by entries, by a weight (bytes), or both: the least recently used entries leave
// first. Every in-process cache of the project that can grow with its input is one of these, so
// "bounded memory" is one reviewed piece of code and one set of tests.
//
// It leans on Map keeping insertion order: an entry read or written is deleted and re-inserted, so
// the first key is always the least recently used one. A read allocates nothing.
//
// A bound of 0 turns the cache off: it keeps nothing and every set() returns false, which is what
// a "…_CACHE_BYTES=0" setting means everywhere.

export interface LruOptions<K, V> {
  /** Entries kept at most (an integer ≥ 0; 0: nothing is kept); absent: only maxWeight bounds the map. */
  readonly maxEntries?: number;
  /** The most the entries may weigh together (≥ 0; 0: nothing is kept); absent: only maxEntries bounds the map. */
  readonly maxWeight?: number;
  /** An entry's weight (e.g. its bytes: finite, ≥ 0), taken once when it is set; required with maxWeight. */
  readonly weigh?: (value: V, key: K) => number;
  /** Told about each entry pushed out by the bounds (not about delete(), a replaced value or a refused one). */
  readonly onEvict?: (key: K, value: V) => void;
}

interface Slot<V> {
  readonly value: V;
  readonly weight: number;
}

export class LruMap<K, V> {
  private readonly slots = new Map<K, Slot<V>>();
  private totalWeight = 0;
  private readonly maxEntries: number;
  private readonly maxWeight: number;

  constructor(private readonly options: LruOptions<K, V>) {
    const { maxEntries, maxWeight, weigh } = options;
    if (maxEntries === undefined && maxWeight === undefined)
      throw new RangeError("an LruMap needs maxEntries, maxWeight or both");
    if (maxEntries !== undefined && (!Number.isInteger(maxEntries) || maxEntries < 0))
      throw new RangeError(`maxEntries must be an integer ≥ 0, got ${maxEntries}`);
    if (maxWeight !== undefined && (!Number.isFinite(maxWeight) || maxWeight < 0))
      throw new RangeError(`maxWeight must be a finite number ≥ 0, got ${maxWeight}`);
    if (maxWeight !== undefined && weigh === undefined) throw new RangeError("maxWeight needs a weigh function");
    this.maxEntries = maxEntries ?? Number.POSITIVE_INFINITY;
    this.maxWeight = maxWeight ?? Number.POSITIVE_INFINITY;
  }

  /** False when a bound is 0: the map keeps nothing. */
  get enabled(): boolean {
    return this.maxEntries > 0 && this.maxWeight > 0;
  }

  get size(): number {
    return this.slots.size;
  }

  /** The entries' weight together (0 without a weigh function). */
  get weight(): number {
    return this.totalWeight;
  }

  /** The value, marked as the most recently used. */
  get(key: K): V | undefined {
    const slot = this.slots.get(key);
    if (slot === undefined) return undefined;
    this.slots.delete(key);
    this.slots.set(key, slot);
    return slot.value;
  }

  /** The value, without touching its recency. */
  peek(key: K): V | undefined {
    return this.slots.get(key)?.value;
  }

  has(key: K): boolean {
    return this.slots.has(key);
  }

  /**
   * Stores the value as the most recently used, then evicts from the oldest end until both bounds
   * hold. A value heavier than maxWeight by itself, or any value while the map is off, is not
   * stored and evicts nothing, but the key's old value is gone: returns false.
   *
   * @throws RangeError when weigh gives a negative or non-finite weight (the map is left as it was).
   */
  set(key: K, value: V): boolean {
    const weight = this.options.weigh?.(value, key) ?? 0;
    if (!Number.isFinite(weight) || weight < 0)
      throw new RangeError(`weigh must give a finite weight ≥ 0, got ${weight} for ${String(key)}`);
    this.delete(key);
    if (!this.enabled || weight > this.maxWeight) return false;
    this.slots.set(key, { value, weight });
    this.totalWeight += weight;
    if (this.slots.size > this.maxEntries || this.totalWeight > this.maxWeight) this.evict();
    return true;
  }

  delete(key: K): boolean {
    const slot = this.slots.get(key);
    if (slot === undefined) return false;
    this.slots.delete(key);
    this.totalWeight -= slot.weight;
    return true;
  }

  clear(): void {
    this.slots.clear();
    this.totalWeight = 0;
  }

  /** Oldest first. */
  *entries(): IterableIterator<[K, V]> {
    for (const [key, slot] of this.slots) yield [key, slot.value];
  }

  private evict(): void {
    const { onEvict } = this.options;
    for (const [key, slot] of this.slots) {
      if (this.slots.size <= this.maxEntries && this.totalWeight <= this.maxWeight) return;
      this.slots.delete(key);
      this.totalWeight -= slot.weight;
      onEvict?.(key, slot.value);
    }
  }
}
