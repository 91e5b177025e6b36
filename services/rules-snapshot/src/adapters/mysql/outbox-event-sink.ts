import { enqueueOutboxMessage, traceHeaders } from "@prefix-guard/bus";
import { cloudEventHeaders, encodeEnvelope, Topics } from "@prefix-guard/events";
import { RulesSnapshotEvent } from "@prefix-guard/proto/events/v1/rules_events";
import type { Knex } from "knex";
import type { RulesEventSink } from "../../application/rules-snapshot-service";
import { transactionOf } from "./snapshot-store";

/**
 * rules.snapshot.v1 through the outbox: an event is published only if the snapshot change that
 * caused it committed. Without a transaction (a decision with no DB write) it is enqueued on its own.
 */
export function outboxRulesEventSink(db: Knex, now: () => number): RulesEventSink {
  return {
    async record(event, tx) {
      await enqueueOutboxMessage(tx === undefined ? db : transactionOf(tx), {
        topic: Topics.rulesSnapshot,
        key: event.sessionId,
        value: encodeEnvelope(RulesSnapshotEvent, event),
        headers: {
          "pg-event-type": event.type,
          ...cloudEventHeaders(Topics.rulesSnapshot, "rules-snapshot", event),
          ...traceHeaders(),
        },
        nowMs: now(),
      });
    },
  };
}
