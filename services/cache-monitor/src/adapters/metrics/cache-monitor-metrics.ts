import { BoundedLabelValues } from "@prefix-guard/telemetry";
import { Counter, Histogram, type Registry } from "prom-client";
import type { CacheMonitorObserver, RecordedUsageFigures } from "../../application/cache-monitor";
import type { CauseKind } from "../../domain/cause-taxonomy";
import { modelFamilyOf } from "../../domain/metric-labels";
import type { PriceBook } from "../../domain/pricing";

export type MetricsRegistry = Registry;

const CACHED_RATIO_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 1];

/**
 * Prometheus view of what the monitor records: calls, tokens, cached ratio and cost per model
 * family, collapses by section and cause with their extra cost. Labels are bounded (model family,
 * section key, cause code, currency); never a session. The event pipeline's series (consumed,
 * dead-lettered, apply delay, relay) are the shared ones every service exposes.
 */
export class CacheMonitorMetrics implements CacheMonitorObserver {
  private readonly calls: Counter<"model_family" | "source">;
  private readonly promptTokens: Counter<"model_family">;
  private readonly cachedTokens: Counter<"model_family">;
  private readonly cachedRatio: Histogram<"model_family">;
  private readonly cost: Counter<"model_family" | "currency">;
  private readonly collapses: Counter<"section" | "cause">;
  private readonly extraCost: Counter<"cause" | "currency">;
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
      help: "LLM calls recorded, by model family and input (rpc = RecordUsage, topic = llm.usage.v1).",
      labelNames: ["model_family", "source"] as const,
      registers,
    });
    this.promptTokens = new Counter({
      name: "prefixguard_prompt_tokens_total",
      help: "Prompt tokens of recorded calls, by model family.",
      labelNames: ["model_family"] as const,
      registers,
    });
    this.cachedTokens = new Counter({
      name: "prefixguard_cached_tokens_total",
      help: "Prompt tokens served from the provider's cache, by model family (fleet cache efficiency = cached / prompt).",
      labelNames: ["model_family"] as const,
      registers,
    });
    this.cachedRatio = new Histogram({
      name: "prefixguard_cached_tokens_ratio",
      help: "cached_tokens / prompt_tokens of each recorded call, by model family.",
      labelNames: ["model_family"] as const,
      buckets: CACHED_RATIO_BUCKETS,
      registers,
    });
    this.cost = new Counter({
      name: "prefixguard_llm_cost_total",
      help: "Cost of recorded calls, by model family, in the currency named by the label.",
      labelNames: ["model_family", "currency"] as const,
      registers,
    });
    this.collapses = new Counter({
      name: "prefixguard_cache_collapses_total",
      help: "Cache collapses, once per section they are counted under ((none) = our prefix did not change, (unknown) = not comparable), by cause (README: Cause taxonomy; section_changed's key is the section label).",
      labelNames: ["section", "cause"] as const,
      registers,
    });
    this.extraCost = new Counter({
      name: "prefixguard_collapse_extra_cost_total",
      help: "Cost of collapses above the session's normal cached share, by cause code, in the currency named by the label.",
      labelNames: ["cause", "currency"] as const,
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
    this.calls.inc({ model_family, source: args.source });
    this.promptTokens.inc({ model_family }, args.promptTokens);
    this.cachedTokens.inc({ model_family }, args.cachedTokens);
    this.cachedRatio.observe({ model_family }, args.cachedShare);
    this.cost.inc({ model_family, currency: this.currency }, args.cost);
  }

  collapseDetected(args: {
    sections: readonly string[];
    cause: CauseKind;
    extraCost: number;
    workspace: string;
  }): void {
    for (const section of new Set(args.sections)) this.collapses.inc({ section, cause: args.cause });
    this.extraCost.inc({ cause: args.cause, currency: this.currency }, args.extraCost);
    this.workspaceExtraCost.inc(
      { workspace: this.workspaces.valueOf(args.workspace || "(none)"), currency: this.currency },
      args.extraCost,
    );
  }
}
