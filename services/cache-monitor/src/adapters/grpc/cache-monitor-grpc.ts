import type { ServiceRegistration } from "@prefix-guard/grpc";
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

/** `afterRecord` nudges the outbox relay once the call's transaction has committed. */
export function cacheMonitorRegistration(monitor: CacheMonitor, afterRecord: () => void): ServiceRegistration {
  return {
    name: "prefixguard.monitor.v1.CacheMonitor",
    definition: CacheMonitorDefinition,
    methods: {
      recordUsage: async (request: RecordUsageRequest): Promise<RecordUsageResponse> => {
        const result = await monitor.recordUsage({
          sessionId: request.sessionId,
          usage: request.usage,
          raw: request.raw,
          idempotencyKey: request.idempotencyKey,
          providerResponseId: request.providerResponseId,
          unbuilt: request.unbuilt,
        });
        if (!result.duplicate) afterRecord();
        return {
          cost: result.cost,
          ...(result.collapse ? { collapse: result.collapse } : {}),
          duplicate: result.duplicate,
          idempotencyKey: result.idempotencyKey,
        };
      },
      listCollapses: (request: ListCollapsesRequest): Promise<ListCollapsesResponse> =>
        monitor.listCollapses({ sinceMs: request.sinceMs, sessionId: request.sessionId, limit: request.limit }),
      traceSession: async (request: TraceSessionRequest): Promise<TraceSessionResponse> => ({
        builds: await monitor.traceSession(request.sessionId, request.limit),
      }),
      adviseRetention: (request: AdviseRetentionRequest): Promise<AdviseRetentionResponse> =>
        monitor.adviseRetention(request.sessionId, request.limit, request.workspace),
    } as ServiceRegistration["methods"],
  };
}
