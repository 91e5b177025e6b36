import { Counter, type Registry } from "prom-client";
import {
  STABILIZATION_RULES,
  STABILIZED_METRIC,
  type StabilizationRecorder,
  type StabilizationRule,
} from "../../domain/stabilize/rules";

/** prefixguard_gateway_stabilized_total{rule}: requests each stabilization rule changed (stabilize mode). */
export class StabilizationMetrics implements StabilizationRecorder {
  private readonly stabilizedTotal: Counter<"rule">;

  constructor(registry: Registry) {
    this.stabilizedTotal = new Counter({
      name: STABILIZED_METRIC,
      help: "Requests a stabilization rule changed before forwarding them (GATEWAY_MODE=stabilize), by rule.",
      labelNames: ["rule"] as const,
      registers: [registry],
    });
    for (const rule of STABILIZATION_RULES) this.stabilizedTotal.inc({ rule }, 0);
  }

  stabilized(rule: StabilizationRule): void {
    this.stabilizedTotal.inc({ rule });
  }
}
