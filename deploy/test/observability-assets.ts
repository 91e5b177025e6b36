// The PromQL of deploy/observability (the Grafana dashboard and the Prometheus alert rules), read
// the way the tests need it: every expression with where it comes from, the metric names each one
// uses, and the form a real Prometheus can evaluate (Grafana's variables filled in, an alert's
// threshold comparison removed so the underlying series is what is asked for).

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { repoRoot } from "./support";

export const observabilityDir = join(repoRoot, "deploy/observability");
export const dashboardPath = join(observabilityDir, "grafana-dashboard.json");
export const alertsPath = join(observabilityDir, "alerts.yaml");
export const alertTestsPath = join(observabilityDir, "alerts.test.yaml");
export const runbooksPath = join(observabilityDir, "runbooks.md");

export interface PromQuery {
  /** "dashboard: <panel title> <refId>" or "alert: <name>". */
  readonly origin: string;
  readonly expr: string;
}

interface DashboardPanel {
  readonly title: string;
  readonly type: string;
  readonly targets?: readonly { readonly refId: string; readonly expr: string }[];
}

export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

export function dashboardPanels(): DashboardPanel[] {
  return (JSON.parse(readFileSync(dashboardPath, "utf8")) as { panels: DashboardPanel[] }).panels;
}

export function dashboardQueries(): PromQuery[] {
  return dashboardPanels().flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ origin: `dashboard: ${panel.title} ${target.refId}`, expr: target.expr })),
  );
}

export function alertRules(): AlertRule[] {
  const file = parse(readFileSync(alertsPath, "utf8")) as { groups: { rules: AlertRule[] }[] };
  return file.groups.flatMap((group) => group.rules);
}

export function alertQueries(): PromQuery[] {
  return alertRules().map((rule) => ({ origin: `alert: ${rule.alert}`, expr: rule.expr }));
}

/** Grafana's interval variables as Prometheus needs them for a short test run (1 s scrapes). */
export function withGrafanaVariables(expr: string, rateInterval = "1m", range = "1h"): string {
  return expr.replaceAll("$__rate_interval", rateInterval).replaceAll("$__range", range);
}

/**
 * The expression with its comparisons against a number removed (`A > 50` → `A`, `A > 0 and B == 0`
 * → `A and B`): what the alert compares, which must exist whether or not the alert fires.
 */
export function withoutThreshold(expr: string): string {
  return expr.replace(/\s*(?:[<>]=?|==|!=)\s*-?\d+(?:\.\d+)?(?=\s|\)|$)/g, "").trim();
}

const METRIC = /\bprefixguard_[a-z0-9_]+/g;
const HISTOGRAM_SERIES = /_(bucket|sum|count)$/;

/** The metric families an expression reads (histogram _bucket/_sum/_count folded to the family). */
export function metricFamiliesIn(expr: string): string[] {
  return [...new Set([...expr.matchAll(METRIC)].map((match) => match[0].replace(HISTOGRAM_SERIES, "")))];
}

/**
 * Every metric name the services declare in libs/ and services/ sources: `name: "prefixguard_..."`,
 * or a `..._METRIC = "prefixguard_..."` constant a declaration names (the gateway's stabilized counter).
 */
export function declaredMetricNames(): Set<string> {
  const names = new Set<string>();
  const declarations = /\bname: "(prefixguard_[a-z0-9_]+)"|\b[A-Z][A-Z0-9_]*_METRIC = "(prefixguard_[a-z0-9_]+)"/g;
  for (const root of ["libs", "services"]) {
    for (const file of sourceFiles(join(repoRoot, root))) {
      for (const match of readFileSync(file, "utf8").matchAll(declarations)) {
        const name = match[1] ?? match[2];
        if (name !== undefined) names.add(name);
      }
    }
  }
  return names;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (entry === "node_modules" || entry === "gen" || entry === "dist" || entry === "test") continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (path.endsWith(".ts") && !path.endsWith(".test.ts")) out.push(path);
  }
  return out;
}
