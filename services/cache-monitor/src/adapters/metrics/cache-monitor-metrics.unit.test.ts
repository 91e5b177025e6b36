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
        trafficSource: "prompt-assembly",
      });
    metrics.collapseDetected({
      sections: ["(none)"],
      cause: causeKindOf("ttl_expired"),
      extraCost: 1,
      workspace: "",
      trafficSource: "prompt-assembly",
    });
    const series = await collapseSeries(registry);
    expect(new Set([...series.keys()].map((key) => key.split("|")[1]))).toEqual(
      new Set(["section_changed", "ttl_expired"]),
    );
    expect(series.get("key-7|section_changed")).toBe(1);
    expect(series.get("(none)|ttl_expired")).toBe(1);
  });
});

describe("the source label", () => {
  it("counts a gateway collapse under its block's kind, never the block's index, and apart from our builds'", async () => {
    const registry = new Registry();
    const metrics = new CacheMonitorMetrics(registry, { currency: "USD", perModel: {} });
    for (let i = 0; i < 40; i++)
      metrics.collapseDetected({
        sections: [`system[${i}]`],
        cause: causeKindOf(sectionChanged(`system[${i}]`)),
        extraCost: 0.5,
        workspace: "",
        trafficSource: "gateway",
      });
    metrics.collapseDetected({
      sections: ["(tools)"],
      cause: "tools_changed",
      extraCost: 1,
      workspace: "",
      trafficSource: "gateway",
    });
    metrics.collapseDetected({
      sections: ["made-up-key-7"],
      cause: "section_changed",
      extraCost: 0,
      workspace: "",
      trafficSource: "gateway",
    });
    metrics.collapseDetected({
      sections: ["system[0]"],
      cause: "section_changed",
      extraCost: 2,
      workspace: "/srv/ws/a",
      trafficSource: "prompt-assembly",
    });
    const json = await registry.getMetricsAsJSON();
    const series = (name: string) =>
      Object.fromEntries(
        ((json.find((m) => m.name === name)?.values ?? []) as { labels: Record<string, string>; value: number }[]).map(
          (v) => [Object.values(v.labels).join("|"), v.value],
        ),
      );
    expect(series("prefixguard_cache_collapses_total")).toEqual({
      "system|section_changed|gateway": 40,
      "(tools)|tools_changed|gateway": 1,
      "other|section_changed|gateway": 1,
      "system[0]|section_changed|prompt-assembly": 1,
    });
    expect(series("prefixguard_collapse_extra_cost_total")).toEqual({
      "section_changed|USD|gateway": 20,
      "tools_changed|USD|gateway": 1,
      "section_changed|USD|prompt-assembly": 2,
    });
  });

  it("labels every usage series with the source, and the calls with the intake too", async () => {
    const registry = new Registry();
    const metrics = new CacheMonitorMetrics(registry, { currency: "USD", perModel: {} });
    const figures = { model: "gpt-4o", promptTokens: 1000, cachedTokens: 900, cachedShare: 0.9, cost: 0.01 };
    metrics.usageRecorded({ ...figures, source: "topic", trafficSource: "gateway" });
    metrics.usageRecorded({ ...figures, source: "rpc", trafficSource: "prompt-assembly" });
    const json = await registry.getMetricsAsJSON();
    const labels = (name: string) =>
      ((json.find((m) => m.name === name)?.values ?? []) as { labels: Record<string, string> }[])
        .map((v) => v.labels)
        .filter((l) => !("le" in l));
    expect(labels("prefixguard_llm_calls_total")).toEqual([
      { model_family: "gpt-4o", intake: "topic", source: "gateway" },
      { model_family: "gpt-4o", intake: "rpc", source: "prompt-assembly" },
    ]);
    for (const name of [
      "prefixguard_prompt_tokens_total",
      "prefixguard_cached_tokens_total",
      "prefixguard_llm_cost_total",
    ])
      expect(labels(name).map((l) => l.source)).toEqual(["gateway", "prompt-assembly"]);
  });
});

describe("the per-workspace extra cost", () => {
  it("names the first workspaces seen and counts later ones (a build-less usage's (none) too) as (other)", async () => {
    const registry = new Registry();
    const metrics = new CacheMonitorMetrics(registry, { currency: "USD", perModel: {} }, 2);
    const collapse = (workspace: string, extraCost: number) =>
      metrics.collapseDetected({
        sections: ["skills"],
        cause: "section_changed",
        extraCost,
        workspace,
        trafficSource: "prompt-assembly",
      });
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
