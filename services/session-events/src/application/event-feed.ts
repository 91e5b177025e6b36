// The feed of committed MessageSaved events to followers (prompt-assembly replicas;
// docs/decisions/followed-views.md), so a build right after a SaveMessage finds its held view
// already extended instead of asking ReadEvents. It only speeds builds up: nothing depends on a
// batch arriving. A follower that cannot keep up misses batches (counted) rather than make this
// process hold them, and a follower applies an event only when it holds the session at the seq
// before it, so a missed batch costs it one ReadEvents.
//
// Only sessions some peer reads are sent: a session whose events were asked for with ReadEvents is
// one a prompt-assembly builds (its first build after a start, or one behind min_seq, reads), and
// each event sent keeps it wanted. A session written and never built (an importer, a replay) costs
// the feed one map lookup per event and nothing on the wire.

import { ResourceExhaustedError, UnavailableError } from "@prefix-guard/errors";
import { LruMap } from "@prefix-guard/lru";

export interface FollowedEvent {
  readonly sessionId: string;
  readonly seq: number;
  /** The SessionEvent as stored (sealed content), encoded. */
  readonly event: Uint8Array;
}

/** One follower's stream. `send` returns false when the stream's buffer is full. */
export interface FeedFollower {
  send(events: readonly FollowedEvent[]): boolean;
  /** Called once when the follower is full; `resume` once it can take more. */
  onceWritable(resume: () => void): void;
  /** Ends the follower's stream (this process is stopping). */
  end(): void;
}

export interface FeedCounters {
  sent(events: number): void;
  dropped(events: number): void;
  followers(count: number): void;
}

const NO_COUNTERS: FeedCounters = { sent: () => undefined, dropped: () => undefined, followers: () => undefined };

export class SessionEventFeed {
  private readonly followers = new Map<FeedFollower, { congested: boolean }>();
  private pending: FollowedEvent[] = [];
  private flushQueued = false;
  private closed = false;
  /** Sessions a peer has read (most recently read or sent last out). */
  private readonly wanted: LruMap<string, true>;

  constructor(
    private readonly maxFollowers: number,
    private readonly counters: FeedCounters = NO_COUNTERS,
    wantedSessions = 100_000,
  ) {
    this.wanted = new LruMap({ maxEntries: wantedSessions });
  }

  /** A session whose events were read (ReadEvents): followers build it, so its saves are sent. */
  read(sessionId: string): void {
    if (this.followers.size > 0) this.wanted.set(sessionId, true);
  }

  /** Adds a follower; returns what removes it. */
  follow(follower: FeedFollower): () => void {
    if (this.closed) throw new UnavailableError("session-events is stopping; follow another replica");
    if (this.followers.size >= this.maxFollowers) {
      throw new ResourceExhaustedError(`this replica already has ${this.maxFollowers} followers (FEED_MAX_FOLLOWERS)`, {
        reason: "too_many_followers",
      });
    }
    this.followers.set(follower, { congested: false });
    this.counters.followers(this.followers.size);
    return () => {
      if (this.followers.delete(follower)) this.counters.followers(this.followers.size);
    };
  }

  /** Ends every follower's stream, so the server's graceful stop does not wait on them. */
  close(): void {
    this.closed = true;
    const followers = [...this.followers.keys()];
    this.followers.clear();
    this.counters.followers(0);
    for (const follower of followers) follower.end();
  }

  /**
   * An event whose transaction committed. Events committed in the same turn of the event loop (one
   * append group) go out as one batch, in the order given.
   */
  committed(event: FollowedEvent): void {
    if (this.followers.size === 0 || this.wanted.get(event.sessionId) === undefined) return;
    this.pending.push(event);
    if (this.flushQueued) return;
    this.flushQueued = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    this.flushQueued = false;
    for (const [follower, state] of this.followers) {
      if (state.congested) {
        this.counters.dropped(batch.length);
        continue;
      }
      this.counters.sent(batch.length);
      if (!follower.send(batch)) {
        state.congested = true;
        follower.onceWritable(() => {
          state.congested = false;
        });
      }
    }
  }
}
