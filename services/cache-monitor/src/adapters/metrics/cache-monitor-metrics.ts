import { BoundedLabelValues } from "@prefix-guard/telemetry";
import { Counter, Histogram, type Registry } from "prom-client";
import type { CacheMonitorObserver, RecordedUsageFigures } from "../../application/cache-monitor";
import type { CauseKind } from "../../domain/cause-taxonomy";
import { modelFamilyOf, sectionLabelOf } from "../../domain/metric-labels";
import type { TrafficSource } from "../../domain/model";
import type { PriceBook } from "../../domain/pricing";

export type MetricsRegistry = Registry;

const CACHED_RATIO_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 1];

/**
 * Prometheus view of what the monitor records: calls, tokens, cached ratio and cost per model
 * family, collapses by section and cause with their extra cost, each by source (prompt-assembly:
 * our builds; gateway: requests it forwarded). Labels are bounded (model family, section key or
 * gateway block kind, cause code, currency, source); never a session. The event pipeline's series (consumed,
 * dead-lettered, apply delay, relay) are the shared ones every service exposes.
 */
export class CacheMonitorMetrics implements CacheMonitorObserver {
  private readonly calls: Counter<"model_family" | "intake" | "source">;
  private readonly promptTokens: Counter<"model_family" | "source">;
  private readonly cachedTokens: Counter<"model_family" | "source">;
  private readonly cachedRatio: Histogram<"model_family" | "source">;
  private readonly cost: Counter<"model_family" | "currency" | "source">;
  private readonly collapses: Counter<"section" | "cause" | "source">;
  private readonly extraCost: Counter<"cause" | "currency" | "source">;
  private readonly workspaceExtraCost: Counter<"workspace" | "currency">;
  private readonly workspaces: BoundedLabelValues;
  private readonly currency: string;

  /** @param workspaceLabels workspaces named in the per-workspace series; later ones count as "(other)". */
  constructor(
    registry: Registry,
    private readonly prices: Pick<PriceBook, "currency" | "perModel">,
    workspaceLabels = 100,
  ) {
    this.workspaces = new BoundedLabelValues(workspaceLabels);
    const registers = [registry];
    this.currency = prices.currency;
    this.calls = new Counter({
      name: "prefixguard_llm_calls_total",
      help: "LLM calls recorded, by model family, intake (rpc = RecordUsage, topic = llm.usage.v1) and source (prompt-assembly = our builds, gateway = requests it forwarded).",
      labelNames: ["model_family", "intake", "source"] as const,
      registers,
    });
    this.promptTokens = new Counter({
      name: "prefixguard_prompt_tokens_total",
      help: "Prompt tokens of recorded calls, by model family and source.",
      labelNames: ["model_family", "source"] as const,
      registers,
    });
    this.cachedTokens = new Counter({
      name: "prefixguard_cached_tokens_total",
      help: "Prompt tokens served from the provider's cache, by model family and source (fleet cache efficiency = cached / prompt).",
      labelNames: ["model_family", "source"] as const,
      registers,
    });
    this.cachedRatio = new Histogram({
      name: "prefixguard_cached_tokens_ratio",
      help: "cached_tokens / prompt_tokens of each recorded call, by model family and source.",
      labelNames: ["model_family", "source"] as const,
      buckets: CACHED_RATIO_BUCKETS,
      registers,
    });
    this.cost = new Counter({
      name: "prefixguard_llm_cost_total",
      help: "Cost of recorded calls, by model family and source, in the currency named by the label.",
      labelNames: ["model_family", "currency", "source"] as const,
      registers,
    });
    this.collapses = new Counter({
      name: "prefixguard_cache_collapses_total",
      help: "Cache collapses, once per section they are counted under ((none) = our prefix did not change, (unknown) = not comparable; a gateway block as its kind: system, messages), by cause (README: Cause taxonomy; section_changed's key is the section label) and source.",
      labelNames: ["section", "cause", "source"] as const,
      registers,
    });
    this.extraCost = new Counter({
      name: "prefixguard_collapse_extra_cost_total",
      help: "Cost of collapses above the session's normal cached share, by cause code and source, in the currency named by the label.",
      labelNames: ["cause", "currency", "source"] as const,
      registers,
    });
    this.workspaceExtraCost = new Counter({
      name: "prefixguard_workspace_collapse_extra_cost_total",
      help: "Cost of collapses above the session's normal cached share, by the workspace of the build (the first METRICS_WORKSPACE_LABELS seen; later ones as (other); (none) = a usage with no build of prefix-guard), in the currency named by the label.",
      labelNames: ["workspace", "currency"] as const,
      registers,
    });
  }

  usageRecorded(args: RecordedUsageFigures): void {
    const model_family = modelFamilyOf(args.model, this.prices);
    const source = args.trafficSource;
    this.calls.inc({ model_family, intake: args.source, source });
    this.promptTokens.inc({ model_family, source }, args.promptTokens);
    this.cachedTokens.inc({ model_family, source }, args.cachedTokens);
    this.cachedRatio.observe({ model_family, source }, args.cachedShare);
    this.cost.inc({ model_family, currency: this.currency, source }, args.cost);
  }

  collapseDetected(args: {
    sections: readonly string[];
    cause: CauseKind;
    extraCost: number;
    workspace: string;
    trafficSource: TrafficSource;
  }): void {
    const source = args.trafficSource;
    const sections = new Set(args.sections.map((section) => sectionLabelOf(section, source)));
    for (const section of sections) this.collapses.inc({ section, cause: args.cause, source });
    this.extraCost.inc({ cause: args.cause, currency: this.currency, source }, args.extraCost);
    this.workspaceExtraCost.inc(
      { workspace: this.workspaces.valueOf(args.workspace || "(none)"), currency: this.currency },
      args.extraCost,
    );
  }
}
