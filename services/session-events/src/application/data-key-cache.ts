import type { DataKey } from "@prefix-guard/events";

/**
 * Sessions' data keys this process has read or created, so sealing a write costs no statement in
 * the common case. Bounded by count (an entry is 32 bytes and two ids), least recently used out.
 * Only keys of live sessions go in; an erased session's entry is dropped at its erasure. It is never
 * the answer to GetDataKeys, which always reads the table (another replica may have erased a key).
 */
export class DataKeyCache {
  private readonly entries = new Map<string, DataKey>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error("capacity must be an integer >= 1");
  }

  get size(): number {
    return this.entries.size;
  }

  get(sessionId: string): DataKey | undefined {
    const key = this.entries.get(sessionId);
    if (key !== undefined) {
      // Map keeps insertion order: re-inserting makes it the most recently used.
      this.entries.delete(sessionId);
      this.entries.set(sessionId, key);
    }
    return key;
  }

  set(sessionId: string, key: DataKey): void {
    this.entries.delete(sessionId);
    this.entries.set(sessionId, key);
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
  }

  delete(sessionId: string): void {
    this.entries.delete(sessionId);
  }
}
