import { callerOf, type ServiceRegistration } from "@prefix-guard/grpc";
import {
  type AdviseRetentionRequest,
  type AdviseRetentionResponse,
  CacheMonitorService as CacheMonitorDefinition,
  type ListCollapsesRequest,
  type ListCollapsesResponse,
  type RecordUsageRequest,
  type RecordUsageResponse,
  type TraceSessionRequest,
  type TraceSessionResponse,
} from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import type { CacheMonitor } from "../../application/cache-monitor";

/**
 * Who may call what (README, "Security"). SREs see the fleet (figures, hashes and causes: nothing
 * here is content); a harness sees and records only its own sessions; a peer (the gateway)
 * records usage for the traffic it forwards.
 */
export const CACHE_MONITOR_ACCESS = {
  recordUsage: ["harness", "peer"],
  listCollapses: ["sre", "harness"],
  traceSession: ["sre", "harness"],
  adviseRetention: ["sre", "harness"],
} as const satisfies ServiceRegistration["access"];

/** `afterRecord` nudges the outbox relay once the call's transaction has committed. */
export function cacheMonitorRegistration(monitor: CacheMonitor, afterRecord: () => void): ServiceRegistration {
  return {
    name: "prefixguard.monitor.v1.CacheMonitor",
    definition: CacheMonitorDefinition,
    access: CACHE_MONITOR_ACCESS,
    methods: {
      recordUsage: async (request: RecordUsageRequest, call: object): Promise<RecordUsageResponse> => {
        const result = await monitor.recordUsage(
          {
            sessionId: request.sessionId,
            usage: request.usage,
            raw: request.raw,
            idempotencyKey: request.idempotencyKey,
            providerResponseId: request.providerResponseId,
            unbuilt: request.unbuilt,
          },
          callerOf(call),
        );
        if (!result.duplicate) afterRecord();
        return {
          cost: result.cost,
          ...(result.collapse ? { collapse: result.collapse } : {}),
          duplicate: result.duplicate,
          idempotencyKey: result.idempotencyKey,
        };
      },
      listCollapses: (request: ListCollapsesRequest, call: object): Promise<ListCollapsesResponse> =>
        monitor.listCollapses(
          { sinceMs: request.sinceMs, sessionId: request.sessionId, limit: request.limit },
          callerOf(call),
        ),
      traceSession: async (request: TraceSessionRequest, call: object): Promise<TraceSessionResponse> => ({
        builds: await monitor.traceSession(request.sessionId, request.limit, callerOf(call)),
      }),
      adviseRetention: (request: AdviseRetentionRequest, call: object): Promise<AdviseRetentionResponse> =>
        monitor.adviseRetention(request.sessionId, request.limit, request.workspace, callerOf(call)),
    } as ServiceRegistration["methods"],
  };
}
