import { Counter, Gauge, type Registry } from "prom-client";
import type { FeedCounters } from "../../application/event-feed";

/** prefixguard_session_feed_*: what the followers' feed sent, what it dropped for a full follower. */
export function feedMetrics(registry: Registry): FeedCounters {
  const events = new Counter({
    name: "prefixguard_session_feed_events_total",
    help: "MessageSaved events offered to FollowEvents followers: sent, or dropped because the follower's stream was full.",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const followers = new Gauge({
    name: "prefixguard_session_feed_followers",
    help: "FollowEvents streams open on this replica.",
    registers: [registry],
  });
  events.inc({ outcome: "sent" }, 0);
  events.inc({ outcome: "dropped" }, 0);
  return {
    sent: (count) => events.inc({ outcome: "sent" }, count),
    dropped: (count) => events.inc({ outcome: "dropped" }, count),
    followers: (count) => followers.set(count),
  };
}
