import { Counter, Histogram, type Registry } from "prom-client";
import { UNOBSERVED_REASONS, type UnobservedCounter, type UnobservedReason } from "../../application/observe-exchange";
import type { RouteName, UpstreamName } from "../../domain/routes";
import type { UpstreamFailureKind } from "../http/upstream";

export type RequestRoute = RouteName | "pass_through" | "local";
export type RequestOutcome =
  | "completed"
  | "client_aborted"
  | "upstream_failed"
  | "rejected"
  /** Refused by the caller gate (application/caller-gate.ts) before anything was read or forwarded. */
  | "unauthenticated"
  | "forbidden"
  | "rate_limited";
/** An HTTP status as its class ("2xx" … "5xx"), or "none" when the client got no status line. */
export type StatusClass = "1xx" | "2xx" | "3xx" | "4xx" | "5xx" | "none";

export function statusClassOf(status: number | null): StatusClass {
  if (status === null || status < 100 || status > 599) return "none";
  return `${Math.floor(status / 100)}xx` as StatusClass;
}

/** Seconds; the bench's goal is a p50 ≤ 0.5 ms, so the low buckets are fine-grained. */
const ADDED_LATENCY_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.1];
export type UpstreamFailureLabel =
  | "connect_failed"
  | "connect_timeout"
  | "headers_timeout"
  | "idle_timeout"
  | "connection_lost";

const OBSERVED: readonly RouteName[] = ["openai_chat", "openai_responses", "anthropic_messages"];

/** The gateway's own series. Labels are closed sets: no session, model or header ever becomes one. */
export class GatewayMetrics implements UnobservedCounter {
  private readonly unobservedTotal: Counter<"reason">;
  private readonly requestsTotal: Counter<"route" | "outcome">;
  private readonly upstreamFailuresTotal: Counter<"upstream" | "kind">;
  private readonly responsesTotal: Counter<"route" | "status">;
  private readonly addedLatency: Histogram<"route">;

  constructor(registry: Registry) {
    this.unobservedTotal = new Counter({
      name: "prefixguard_gateway_unobserved_total",
      help: "Exchanges (or their usage) the gateway forwarded but could not observe, by reason. Traffic is never affected.",
      labelNames: ["reason"] as const,
      registers: [registry],
    });
    this.requestsTotal = new Counter({
      name: "prefixguard_gateway_requests_total",
      help: "Requests the gateway handled, by route (observed route, pass_through, local) and outcome.",
      labelNames: ["route", "outcome"] as const,
      registers: [registry],
    });
    this.upstreamFailuresTotal = new Counter({
      name: "prefixguard_gateway_upstream_failures_total",
      help: "Upstream calls that failed or timed out, by upstream and kind.",
      labelNames: ["upstream", "kind"] as const,
      registers: [registry],
    });
    this.responsesTotal = new Counter({
      name: "prefixguard_gateway_responses_total",
      help: "Responses the gateway's clients received, by route and HTTP status class (upstream answers passed on and the gateway's own); none = no status line (the exchange broke first).",
      labelNames: ["route", "status"] as const,
      registers: [registry],
    });
    this.addedLatency = new Histogram({
      name: "prefixguard_gateway_added_latency_seconds",
      help: "Time the gateway held an observed request between reading its body and forwarding it (parsing, include_usage, stabilization), by route.",
      labelNames: ["route"] as const,
      buckets: ADDED_LATENCY_BUCKETS,
      registers: [registry],
    });
    // Every series at 0 from the start, so an alert on increase() sees it before the first event.
    for (const reason of UNOBSERVED_REASONS) this.unobservedTotal.inc({ reason }, 0);
    for (const route of OBSERVED) this.requestsTotal.inc({ route, outcome: "completed" }, 0);
  }

  count(reason: UnobservedReason): void {
    this.unobservedTotal.inc({ reason });
  }

  request(route: RequestRoute, outcome: RequestOutcome): void {
    this.requestsTotal.inc({ route, outcome });
  }

  response(route: RequestRoute, status: number | null): void {
    this.responsesTotal.inc({ route, status: statusClassOf(status) });
  }

  /** `ms` from the request body read to the upstream call started. */
  added(route: RouteName, ms: number): void {
    this.addedLatency.observe({ route }, ms / 1000);
  }

  upstreamFailure(upstream: UpstreamName, kind: UpstreamFailureKind): void {
    this.upstreamFailuresTotal.inc({ upstream, kind });
  }
}
