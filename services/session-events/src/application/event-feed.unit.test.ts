import { ResourceExhaustedError, UnavailableError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { type FeedFollower, type FollowedEvent, SessionEventFeed } from "./event-feed";

const event = (sessionId: string, seq: number): FollowedEvent => ({ sessionId, seq, event: new Uint8Array([seq]) });
const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A follower that records batches and reports full while `full` is set. */
function follower() {
  const batches: number[][] = [];
  let resume: (() => void) | undefined;
  const state = { full: false, ended: false };
  const self: FeedFollower & { batches: number[][]; state: typeof state; drain(): void } = {
    batches,
    state,
    send(events) {
      batches.push(events.map((e) => e.seq));
      return !state.full;
    },
    onceWritable(callback) {
      resume = callback;
    },
    drain() {
      state.full = false;
      resume?.();
    },
    end() {
      state.ended = true;
    },
  };
  return self;
}

function counted() {
  const counts = { sent: 0, dropped: 0, followers: 0 };
  return {
    counts,
    counters: {
      sent: (n: number) => {
        counts.sent += n;
      },
      dropped: (n: number) => {
        counts.dropped += n;
      },
      followers: (n: number) => {
        counts.followers = n;
      },
    },
  };
}

describe("SessionEventFeed", () => {
  it("sends the events committed in one turn as one batch, in order, to every follower", async () => {
    const feed = new SessionEventFeed(4);
    const a = follower();
    const b = follower();
    feed.follow(a);
    feed.follow(b);
    feed.read("s");
    feed.read("t");
    feed.committed(event("s", 1));
    feed.committed(event("t", 7));
    await tick();
    feed.committed(event("s", 2));
    await tick();
    expect(a.batches).toEqual([[1, 7], [2]]);
    expect(b.batches).toEqual([[1, 7], [2]]);
  });

  it("drops batches for a full follower until it drains, and counts them; others are not held back", async () => {
    const { counts, counters } = counted();
    const feed = new SessionEventFeed(4, counters);
    const slow = follower();
    const fast = follower();
    feed.follow(slow);
    feed.follow(fast);
    feed.read("s");
    slow.state.full = true;
    feed.committed(event("s", 1));
    await tick();
    feed.committed(event("s", 2));
    await tick();
    slow.drain();
    feed.committed(event("s", 3));
    await tick();
    expect(slow.batches).toEqual([[1], [3]]);
    expect(fast.batches).toEqual([[1], [2], [3]]);
    expect(counts).toEqual({ sent: 5, dropped: 1, followers: 2 });
  });

  it("stops sending to a follower once removed, and holds nothing when no one follows", async () => {
    const { counts, counters } = counted();
    const feed = new SessionEventFeed(4, counters);
    const a = follower();
    const unfollow = feed.follow(a);
    feed.read("s");
    unfollow();
    unfollow();
    feed.committed(event("s", 1));
    await tick();
    expect(a.batches).toEqual([]);
    expect(counts).toEqual({ sent: 0, dropped: 0, followers: 0 });
  });

  it("sends only the sessions a peer has read, and forgets the least recently read or sent first", async () => {
    const { counts, counters } = counted();
    const feed = new SessionEventFeed(4, counters, 2);
    const a = follower();
    feed.follow(a);
    feed.committed(event("never-read", 1));
    feed.read("s");
    feed.read("t");
    feed.committed(event("s", 2)); // sending keeps s wanted: t is now the least recently used
    await tick();
    feed.read("u"); // pushes t out
    feed.committed(event("t", 3));
    feed.committed(event("u", 4));
    feed.committed(event("s", 5));
    await tick();
    expect(a.batches).toEqual([[2], [4, 5]]);
    expect(counts.sent).toBe(3);
  });

  it("remembers no reads while no one follows", async () => {
    const feed = new SessionEventFeed(4);
    feed.read("s");
    const a = follower();
    feed.follow(a);
    feed.committed(event("s", 1));
    await tick();
    expect(a.batches).toEqual([]);
  });

  it("ends every follower's stream on close and refuses new ones with UNAVAILABLE", async () => {
    const { counts, counters } = counted();
    const feed = new SessionEventFeed(4, counters);
    const a = follower();
    feed.follow(a);
    feed.read("s");
    feed.close();
    expect(a.state.ended).toBe(true);
    expect(counts.followers).toBe(0);
    expect(() => feed.follow(follower())).toThrow(UnavailableError);
    feed.committed(event("s", 1));
    await tick();
    expect(a.batches).toEqual([]);
  });

  it("refuses followers past its limit with RESOURCE_EXHAUSTED too_many_followers", () => {
    const feed = new SessionEventFeed(1);
    feed.follow(follower());
    expect(() => feed.follow(follower())).toThrow(ResourceExhaustedError);
    expect(() => feed.follow(follower())).toThrow(/FEED_MAX_FOLLOWERS/);
    expect(() => new SessionEventFeed(0).follow(follower())).toThrow(ResourceExhaustedError);
  });
});
