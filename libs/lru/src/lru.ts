// A map bounded by entries and, optionally, by a weight (bytes): the least recently used entries
// leave first. Every in-process cache of the project that can grow with its input is one of these,
// so "bounded memory" is one reviewed piece of code and one set of tests.
//
// It leans on Map keeping insertion order: an entry read or written is deleted and re-inserted, so
// the first key is always the least recently used one.

export interface LruOptions<K, V> {
  /** Entries kept at most (≥ 1). */
  readonly maxEntries: number;
  /** The most the entries may weigh together; absent: only maxEntries bounds the map. */
  readonly maxWeight?: number;
  /** An entry's weight (e.g. its bytes); required with maxWeight. */
  readonly weigh?: (value: V, key: K) => number;
  /** Told about each entry pushed out by the bounds (not about delete() or a replaced value). */
  readonly onEvict?: (key: K, value: V) => void;
}

interface Slot<V> {
  readonly value: V;
  readonly weight: number;
}

export class LruMap<K, V> {
  private readonly slots = new Map<K, Slot<V>>();
  private totalWeight = 0;

  constructor(private readonly options: LruOptions<K, V>) {
    if (!Number.isInteger(options.maxEntries) || options.maxEntries < 1)
      throw new RangeError(`maxEntries must be an integer ≥ 1, got ${options.maxEntries}`);
    if (options.maxWeight !== undefined && options.weigh === undefined)
      throw new RangeError("maxWeight needs a weigh function");
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
   * hold. A value heavier than maxWeight by itself is not stored (and any old value of the key is
   * gone): returns false.
   */
  set(key: K, value: V): boolean {
    this.delete(key);
    const weight = this.options.weigh?.(value, key) ?? 0;
    if (this.options.maxWeight !== undefined && weight > this.options.maxWeight) return false;
    this.slots.set(key, { value, weight });
    this.totalWeight += weight;
    this.evict();
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
    const { maxEntries, maxWeight, onEvict } = this.options;
    for (const [key, slot] of this.slots) {
      if (this.slots.size <= maxEntries && (maxWeight === undefined || this.totalWeight <= maxWeight)) return;
      this.slots.delete(key);
      this.totalWeight -= slot.weight;
      onEvict?.(key, slot.value);
    }
  }
}
