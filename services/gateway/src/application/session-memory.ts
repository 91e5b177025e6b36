// The previous request of each session, so the next one can be compared with it: its cut (hashes
// and sizes) and, while they fit, its block texts (to find the byte where a changed block
// diverged). Bounded by bytes, least recently used session first out. A session whose texts alone
// exceed the bound keeps its cut only: the changed block is still named, without the offset.
//
// Process memory only: a restart forgets every session, and the first request after it is compared
// with nothing (the provider's cache has usually expired over such a gap anyway).

import type { CacheCut } from "../domain/cache-order";

export interface RememberedRequest {
  readonly cut: CacheCut;
  /** A block's canonical text, while it is held. */
  text(index: number): string | undefined;
}

interface Entry {
  readonly cut: CacheCut;
  readonly texts: readonly string[] | null;
  readonly bytes: number;
}

/** What an entry costs besides its texts: the map entry, the cut and each block's facts. */
const ENTRY_OVERHEAD_BYTES = 256;
const BLOCK_OVERHEAD_BYTES = 160;

export class SessionMemory {
  private readonly entries = new Map<string, Entry>();
  private heldBytes = 0;

  constructor(private readonly maxBytes: number) {}

  get bytes(): number {
    return this.heldBytes;
  }

  get sessions(): number {
    return this.entries.size;
  }

  /** The previous request of `session`, marked as recently used. */
  recall(session: string): RememberedRequest | undefined {
    const entry = this.entries.get(session);
    if (entry === undefined) return undefined;
    this.entries.delete(session);
    this.entries.set(session, entry);
    const texts = entry.texts;
    return { cut: entry.cut, text: (index) => texts?.[index] };
  }

  /** Replaces the session's previous request with this one. */
  remember(session: string, cut: CacheCut, texts: readonly string[]): void {
    this.forget(session);
    const factsBytes = ENTRY_OVERHEAD_BYTES + session.length * 2 + cut.blocks.length * BLOCK_OVERHEAD_BYTES;
    const withTexts = factsBytes + cut.totalBytes;
    const entry: Entry =
      withTexts <= this.maxBytes ? { cut, texts, bytes: withTexts } : { cut, texts: null, bytes: factsBytes };
    if (entry.bytes > this.maxBytes) return;
    this.entries.set(session, entry);
    this.heldBytes += entry.bytes;
    for (const [oldest, old] of this.entries) {
      if (this.heldBytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.heldBytes -= old.bytes;
    }
  }

  forget(session: string): void {
    const entry = this.entries.get(session);
    if (entry === undefined) return;
    this.entries.delete(session);
    this.heldBytes -= entry.bytes;
  }
}
