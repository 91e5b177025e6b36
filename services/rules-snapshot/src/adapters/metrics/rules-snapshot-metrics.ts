// Prometheus view of rules-snapshot: Resolve outcomes by decision. Every decision is at 0 from the
// start, so rate() and the DEGRADED_RAW alert see its series before the first one.

import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { Counter, type Registry } from "prom-client";

const labelOf = (decision: Decision): string => (Decision[decision] ?? String(decision)).replace("DECISION_", "");

export class RulesSnapshotMetrics {
  private readonly decisions: Counter<"decision">;

  constructor(registry: Registry) {
    this.decisions = new Counter({
      name: "prefixguard_rules_decisions_total",
      help: "Resolve outcomes by decision (PINNED, RETAINED, REPINNED_*, DEGRADED_RAW ...).",
      labelNames: ["decision"] as const,
      registers: [registry],
    });
    for (const value of Object.values(Decision))
      if (typeof value === "number" && value > 0) this.decisions.inc({ decision: labelOf(value) }, 0);
  }

  decided(decision: Decision): void {
    this.decisions.inc({ decision: labelOf(decision) });
  }
}
