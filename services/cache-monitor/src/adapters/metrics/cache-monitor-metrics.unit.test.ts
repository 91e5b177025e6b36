import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { causeKindOf, sectionChanged } from "../../domain/cause-taxonomy";
import { CacheMonitorMetrics } from "./cache-monitor-metrics";

async function collapseSeries(registry: Registry): Promise<Map<string, number>> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === "prefixguard_cache_collapses_total");
  const series = new Map<string, number>();
  for (const value of (metric?.values ?? []) as { labels: Record<string, string>; value: number }[])
    series.set(`${value.labels.section}|${value.labels.cause}`, value.value);
  return series;
}

describe("the collapse counter's cause label", () => {
  it("is the cause code's kind, the section key staying in the section label (bounded however many keys arrive)", async () => {
    const registry = new Registry();
    const metrics = new CacheMonitorMetrics(registry, { currency: "USD", perModel: {} });
    for (let i = 0; i < 40; i++)
      metrics.collapseDetected({
        sections: [`key-${i}`],
        cause: causeKindOf(sectionChanged(`key-${i}`)),
        extraCost: 0,
        workspace: "/srv/ws/a",
      });
    metrics.collapseDetected({ sections: ["(none)"], cause: causeKindOf("ttl_expired"), extraCost: 1, workspace: "" });
    const series = await collapseSeries(registry);
    expect(new Set([...series.keys()].map((key) => key.split("|")[1]))).toEqual(
      new Set(["section_changed", "ttl_expired"]),
    );
    expect(series.get("key-7|section_changed")).toBe(1);
    expect(series.get("(none)|ttl_expired")).toBe(1);
  });
});

describe("the per-workspace extra cost", () => {
  it("names the first workspaces seen and counts later ones (a build-less usage's (none) too) as (other)", async () => {
    const registry = new Registry();
    const metrics = new CacheMonitorMetrics(registry, { currency: "USD", perModel: {} }, 2);
    const collapse = (workspace: string, extraCost: number) =>
      metrics.collapseDetected({ sections: ["skills"], cause: "section_changed", extraCost, workspace });
    collapse("/srv/ws/a", 0.5);
    collapse("/srv/ws/b", 0.25);
    collapse("/srv/ws/a", 0.5);
    collapse("/srv/ws/c", 2);
    collapse("", 1);
    const metric = (await registry.getMetricsAsJSON()).find(
      (m) => m.name === "prefixguard_workspace_collapse_extra_cost_total",
    );
    const byWorkspace = Object.fromEntries(
      ((metric?.values ?? []) as { labels: Record<string, string>; value: number }[]).map((v) => [
        `${v.labels.workspace}|${v.labels.currency}`,
        v.value,
      ]),
    );
    expect(byWorkspace).toEqual({ "/srv/ws/a|USD": 1, "/srv/ws/b|USD": 0.25, "(other)|USD": 3 });
  });
});
