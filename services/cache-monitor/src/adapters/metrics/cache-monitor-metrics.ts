import { Counter, Histogram, type Registry } from "prom-client";
import type { CacheMonitorObserver } from "../../application/cache-monitor";
import type { UsageSource } from "../mysql/monitor-rows";

export type MetricsRegistry = Registry;

const CACHED_SHARE_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 1];
const EVENT_AGE_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];

/** Prometheus view of what the monitor records: calls, cached share, cost, collapses by section, consumer lag. */
export class CacheMonitorMetrics implements CacheMonitorObserver {
  private readonly usageCalls: Counter<"model" | "source">;
  private readonly cachedShare: Histogram<"model">;
  private readonly cost: Counter<"model">;
  private readonly collapses: Counter<"section">;
  private readonly extraCost: Counter;
  private readonly eventAge: Histogram<"topic">;
  private readonly consumed: Counter<"topic" | "outcome">;

  constructor(registry: Registry, currency: string) {
    const registers = [registry];
    this.usageCalls = new Counter({
      name: "cache_monitor_usage_calls_total",
      help: "LLM calls recorded, by model and by input (rpc = RecordUsage, topic = llm.usage.v1).",
      labelNames: ["model", "source"] as const,
      registers,
    });
    this.cachedShare = new Histogram({
      name: "cache_monitor_cached_share",
      help: "cached_tokens / prompt_tokens of each recorded call.",
      labelNames: ["model"] as const,
      buckets: CACHED_SHARE_BUCKETS,
      registers,
    });
    this.cost = new Counter({
      name: "cache_monitor_cost_total",
      help: `Cost of recorded calls, in ${currency}.`,
      labelNames: ["model"] as const,
      registers,
    });
    this.collapses = new Counter({
      name: "cache_monitor_collapses_total",
      help: "Cache collapses, once per section they changed ((none) = our prefix did not change).",
      labelNames: ["section"] as const,
      registers,
    });
    this.extraCost = new Counter({
      name: "cache_monitor_extra_cost_total",
      help: `Cost of collapses above the session's normal cached share, in ${currency}.`,
      registers,
    });
    this.eventAge = new Histogram({
      name: "cache_monitor_event_age_seconds",
      help: "Time from an input event's occurred_at_ms to its processing here (consumer lag).",
      labelNames: ["topic"] as const,
      buckets: EVENT_AGE_BUCKETS,
      registers,
    });
    this.consumed = new Counter({
      name: "cache_monitor_events_consumed_total",
      help: "Input events by topic and outcome (applied | dead_lettered).",
      labelNames: ["topic", "outcome"] as const,
      registers,
    });
  }

  usageRecorded(args: { model: string; source: UsageSource; cachedShare: number; cost: number }): void {
    this.usageCalls.inc({ model: args.model, source: args.source });
    this.cachedShare.observe({ model: args.model }, args.cachedShare);
    this.cost.inc({ model: args.model }, args.cost);
  }

  collapseDetected(args: { sections: readonly string[]; extraCost: number }): void {
    for (const section of new Set(args.sections)) this.collapses.inc({ section });
    this.extraCost.inc(args.extraCost);
  }

  eventConsumed(topic: string, outcome: "applied" | "dead_lettered", count = 1): void {
    this.consumed.inc({ topic, outcome }, count);
  }

  eventAged(topic: string, ageMs: number): void {
    this.eventAge.observe({ topic }, Math.max(0, ageMs) / 1000);
  }
}
