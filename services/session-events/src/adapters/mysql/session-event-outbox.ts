import { type OutboxSource, RELAY_LEASE_SLOTS } from "@prefix-guard/bus";
import { cloudEventHeaders, Topics } from "@prefix-guard/events";
import type { Knex } from "knex";

/**
 * The event table is the outbox: rows with published_at_ms NULL, read in (session_id, seq) order.
 * Writers of one session are serialised by the session row lock, so a session's rows become visible
 * in seq order; ordering by the auto-increment id instead could skip a row that committed late.
 * Each row carries its session's relay lease slot (lease_slot, written at append), so a relay split
 * over leases publishes each session from one lease holder.
 */
export function sessionEventOutboxSource(db: Knex, topic: string = Topics.sessionEvents): OutboxSource {
  return {
    name: "session_event",
    async fetchUnpublished(limit, slots) {
      // A lease's sessions go slot by slot (its index's order): a session's rows are all in one slot.
      const query = db("session_event").whereNull("published_at_ms");
      const rows = await (slots === undefined || slots.length >= RELAY_LEASE_SLOTS
        ? query.orderBy([{ column: "session_id" }, { column: "seq" }])
        : query
            .whereIn("lease_slot", [...slots])
            .orderBy([{ column: "lease_slot" }, { column: "session_id" }, { column: "seq" }])
      )
        .limit(limit)
        .select("id", "event_id", "session_id", "seq", "type", "payload", "occurred_at_ms", "traceparent");
      return rows.map((row) => ({
        id: Number(row.id),
        topic,
        message: {
          key: String(row.session_id),
          value: new Uint8Array(row.payload as Buffer),
          headers: {
            "pg-event-type": String(row.type),
            "pg-seq": String(row.seq),
            // From the row as appended: a relay that publishes it again sends the same attributes.
            ...cloudEventHeaders(Topics.sessionEvents, "session-events", {
              eventId: String(row.event_id),
              sessionId: String(row.session_id),
              occurredAtMs: Number(row.occurred_at_ms),
              type: String(row.type),
            }),
            ...(row.traceparent ? { traceparent: String(row.traceparent) } : {}),
          },
        },
      }));
    },
    async markPublished(ids, nowMs) {
      for (let i = 0; i < ids.length; i += 500) {
        await db("session_event")
          .whereIn("id", ids.slice(i, i + 500))
          .update({ published_at_ms: nowMs });
      }
    },
    async countUnpublished() {
      const row = await db("session_event").whereNull("published_at_ms").count({ n: "*" }).first();
      return Number(row?.n ?? 0);
    },
  };
}
