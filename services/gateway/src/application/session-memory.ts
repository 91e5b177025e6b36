// The previous request of each session, so the next one can be compared with it: its cut (hashes
// and sizes) and, while they fit, the source of its block texts (the request's bytes, to find the
// byte where a changed block diverged) and where its request id's hash stood at its last message
// (over the same bytes, so the next request id hashes only what is new). Bounded by bytes, least
// recently used session first out. A session whose texts alone exceed the bound keeps its cut only:
// the changed block is still named, without the offset.
//
// Process memory only: a restart forgets every session, and the first request after it is compared
// with nothing (the provider's cache has usually expired over such a gap anyway).

import type { Sha256Checkpoint } from "@prefix-guard/events";
import { LruMap } from "@prefix-guard/lru";
import type { CacheCut } from "../domain/cache-order";

export interface RememberedRequest {
  readonly cut: CacheCut;
  /** A block's canonical text, while it is held. */
  text(index: number): string | undefined;
  /** Where its request id's hash stood, while its bytes are held. */
  readonly requestIdCheckpoint: Sha256Checkpoint | undefined;
}

/** Where a request's block texts come from, and what holding it costs. */
export interface BlockTextSource {
  text(index: number): string | undefined;
  /** Bytes held to answer text() (the request body's size). */
  readonly bytes: number;
}

interface Entry {
  readonly cut: CacheCut;
  readonly texts: BlockTextSource | null;
  /** Over the same request bytes as the texts: held with them or not at all. */
  readonly checkpoint: Sha256Checkpoint | undefined;
  readonly bytes: number;
}

/** What an entry costs besides its texts: the map entry, the cut and each block's facts. */
const ENTRY_OVERHEAD_BYTES = 256;
const BLOCK_OVERHEAD_BYTES = 160;

export class SessionMemory {
  private readonly entries: LruMap<string, Entry>;

  constructor(private readonly maxBytes: number) {
    this.entries = new LruMap({ maxWeight: maxBytes, weigh: (entry) => entry.bytes });
  }

  get bytes(): number {
    return this.entries.weight;
  }

  get sessions(): number {
    return this.entries.size;
  }

  /** The previous request of `session`, marked as recently used. */
  recall(session: string): RememberedRequest | undefined {
    const entry = this.entries.get(session);
    if (entry === undefined) return undefined;
    const texts = entry.texts;
    return { cut: entry.cut, text: (index) => texts?.text(index), requestIdCheckpoint: entry.checkpoint };
  }

  /** Replaces the session's previous request with this one. */
  remember(session: string, cut: CacheCut, texts: BlockTextSource, checkpoint?: Sha256Checkpoint): void {
    const factsBytes = ENTRY_OVERHEAD_BYTES + session.length * 2 + cut.blocks.length * BLOCK_OVERHEAD_BYTES;
    const withTexts = factsBytes + texts.bytes;
    this.entries.set(
      session,
      withTexts <= this.maxBytes
        ? { cut, texts, checkpoint, bytes: withTexts }
        : { cut, texts: null, checkpoint: undefined, bytes: factsBytes },
    );
  }

  forget(session: string): void {
    this.entries.delete(session);
  }
}
