import type { DataKey } from "@prefix-guard/events";
import { LruMap } from "@prefix-guard/lru";

/**
 * Sessions' data keys this process has read or created, so sealing a write costs no statement in
 * the common case. Bounded by count (an entry is 32 bytes and two ids), least recently used out.
 * Only keys of live sessions go in; an erased session's entry is dropped at its erasure. It is never
 * the answer to GetDataKeys, which always reads the table (another replica may have erased a key).
 */
export class DataKeyCache {
  private readonly entries: LruMap<string, DataKey>;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error("capacity must be an integer >= 1");
    this.entries = new LruMap({ maxEntries: capacity });
  }

  get size(): number {
    return this.entries.size;
  }

  /** The key, marked as the most recently used. */
  get(sessionId: string): DataKey | undefined {
    return this.entries.get(sessionId);
  }

  set(sessionId: string, key: DataKey): void {
    this.entries.set(sessionId, key);
  }

  delete(sessionId: string): void {
    this.entries.delete(sessionId);
  }
}
