import { enqueueOutboxMessage, traceHeaders } from "@prefix-guard/bus";
import { cloudEventHeaders, encodeEnvelope, Topics } from "@prefix-guard/events";
import { CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
import { LlmUsageEvent } from "@prefix-guard/proto/events/v1/usage_events";
import type { MonitorEventSink } from "../../application/cache-monitor";
import { transactionOf } from "./monitor-rows";

/**
 * cache.collapse.v1 and llm.usage.v1 through the outbox, keyed by session id: an event is published
 * if and only if the usage or collapse it reports committed.
 */
export function outboxMonitorEventSink(now: () => number): MonitorEventSink {
  return {
    async usageRecorded(event, tx) {
      await enqueueOutboxMessage(transactionOf(tx), {
        topic: Topics.llmUsage,
        key: event.sessionId,
        value: encodeEnvelope(LlmUsageEvent, event),
        headers: {
          "pg-event-type": event.type,
          ...cloudEventHeaders(Topics.llmUsage, "cache-monitor", event),
          ...traceHeaders(),
        },
        nowMs: now(),
      });
    },
    async collapseDetected(event, tx) {
      await enqueueOutboxMessage(transactionOf(tx), {
        topic: Topics.cacheCollapse,
        key: event.sessionId,
        value: encodeEnvelope(CacheCollapseEvent, event),
        headers: {
          "pg-event-type": event.type,
          ...cloudEventHeaders(Topics.cacheCollapse, "cache-monitor", event),
          ...traceHeaders(),
        },
        nowMs: now(),
      });
    },
  };
}
