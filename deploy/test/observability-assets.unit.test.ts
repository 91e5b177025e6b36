// deploy/observability checked against the code: every metric a panel or an alert reads is one the
// services declare, every alert has a runbook section and a promtool test, and the dashboard covers
// what an SRE asks first. (That the series really exist when scraped: prometheus.e2e.test.ts.)
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  alertQueries,
  alertRules,
  alertTestsPath,
  dashboardPanels,
  dashboardQueries,
  declaredMetricNames,
  metricFamiliesIn,
  runbooksPath,
  withoutThreshold,
} from "./observability-assets";

describe("deploy/observability", () => {
  const declared = declaredMetricNames();

  it("finds the services' metrics (the scan itself works)", () => {
    expect(declared).toContain("prefixguard_cache_collapses_total");
    expect(declared).toContain("prefixguard_grpc_server_handling_seconds");
    expect(declared).toContain("prefixguard_relay_backlog_events");
    expect(declared).toContain("prefixguard_gateway_added_latency_seconds");
    // Declared through the constant its recorder names (services/gateway/src/domain/stabilize/rules.ts).
    expect(declared).toContain("prefixguard_gateway_stabilized_total");
  });

  it.each([...dashboardQueries(), ...alertQueries()].map((q) => [q.origin, q.expr] as const))(
    "%s reads only metrics the code declares",
    (_origin, expr) => {
      const families = metricFamiliesIn(expr);
      expect(families.length).toBeGreaterThan(0);
      for (const family of families) expect(declared, `${family} in ${expr}`).toContain(family);
    },
  );

  it("has a runbook section and a promtool test for every alert, and the runbook_url points at it", () => {
    const runbooks = readFileSync(runbooksPath, "utf8");
    const tests = readFileSync(alertTestsPath, "utf8");
    const rules = alertRules();
    expect(rules.map((r) => r.alert).sort()).toEqual([
      "PrefixGuardCacheEfficiencyLow",
      "PrefixGuardCollapseExtraCostOverBudget",
      "PrefixGuardConsumerLagging",
      "PrefixGuardDeadLetters",
      "PrefixGuardRelayStalled",
      "PrefixGuardResolveDegradedToRaw",
      "PrefixGuardSectionBreaksRepeatedly",
    ]);
    for (const rule of rules) {
      expect(runbooks).toContain(`\n## ${rule.alert}\n`);
      expect(rule.annotations?.runbook_url).toBe(`deploy/observability/runbooks.md#${rule.alert.toLowerCase()}`);
      expect(rule.annotations?.summary).toBeTruthy();
      expect(rule.labels?.severity).toMatch(/^(warning|critical)$/);
      expect(tests).toContain(`alertname: ${rule.alert}\n`);
    }
  });

  it("never groups or filters by a session", () => {
    for (const { expr } of [...dashboardQueries(), ...alertQueries()]) expect(expr).not.toMatch(/session/);
  });

  it("has the panels the fleet view needs", () => {
    const titles = dashboardPanels().map((p) => p.title);
    for (const wanted of [
      "Fleet cache efficiency",
      "Collapses by section and cause",
      "Extra cost of collapses by cause",
      "BuildRequest and Resolve latency",
      "Consumer lag (p99 apply delay)",
      "Events applied and dead-lettered",
      "Rules decisions",
      "Gateway requests by route and status",
      "Gateway added latency (p50 / p99)",
      "Gateway traffic not observed, by reason",
      "Gateway requests stabilized, by rule",
    ])
      expect(titles).toContain(wanted);
  });

  it("strips an alert's threshold to the series it compares", () => {
    expect(withoutThreshold("sum(increase(x[10m])) > 0")).toBe("sum(increase(x[10m]))");
    expect(withoutThreshold("(a / b) < 0.5")).toBe("(a / b)");
    expect(withoutThreshold('max by (s) (a{k!="1"}) > 0\nand\nsum by (s) (increase(b[5m])) == 0')).toBe(
      'max by (s) (a{k!="1"})\nand\nsum by (s) (increase(b[5m]))',
    );
    expect(metricFamiliesIn("rate(prefixguard_x_seconds_bucket[1m]) / prefixguard_y_total")).toEqual([
      "prefixguard_x_seconds",
      "prefixguard_y_total",
    ]);
  });
});
