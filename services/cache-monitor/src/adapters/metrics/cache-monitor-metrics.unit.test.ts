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
      });
    metrics.collapseDetected({ sections: ["(none)"], cause: causeKindOf("ttl_expired"), extraCost: 1 });
    const series = await collapseSeries(registry);
    expect(new Set([...series.keys()].map((key) => key.split("|")[1]))).toEqual(
      new Set(["section_changed", "ttl_expired"]),
    );
    expect(series.get("key-7|section_changed")).toBe(1);
    expect(series.get("(none)|ttl_expired")).toBe(1);
  });
});
