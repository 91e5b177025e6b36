import type { Client, ServiceError } from "@grpc/grpc-js";
import { callUnary, insecureCredentials } from "@prefix-guard/grpc";
import {
  PromptAssemblyClient,
  type RebuildProjectionRequest,
  type RebuildProjectionResponse,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import {
  CacheMonitorClient,
  type ListCollapsesRequest,
  type ListCollapsesResponse,
  type TraceSessionRequest,
  type TraceSessionResponse,
} from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import {
  type GetRequest,
  type GetResponse,
  type InvalidateRequest,
  type InvalidateResponse,
  RulesSnapshotClient,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import type { ServiceName, ServiceTargets } from "./args";
import { ServiceCallError } from "./service-error";

/** What prefixctl needs from the services; failures are ServiceCallError. */
export interface PrefixctlClients {
  listCollapses(request: ListCollapsesRequest): Promise<ListCollapsesResponse>;
  traceSession(request: TraceSessionRequest): Promise<TraceSessionResponse>;
  getSnapshot(request: GetRequest): Promise<GetResponse>;
  invalidateSnapshot(request: InvalidateRequest): Promise<InvalidateResponse>;
  rebuildProjection(request: RebuildProjectionRequest): Promise<RebuildProjectionResponse>;
  /** Closes the channels that were opened, so the process can exit. */
  close(): void;
}

export interface ConnectOptions {
  readonly targets: ServiceTargets;
  readonly timeoutMs: number;
}

export type ConnectClients = (options: ConnectOptions) => PrefixctlClients;

function isServiceError(error: unknown): error is ServiceError {
  return typeof error === "object" && error !== null && typeof (error as { code?: unknown }).code === "number";
}

/**
 * gRPC clients, each channel opened on first use: a command talks to one service and must not fail
 * or wait because another one is down.
 */
export const connectGrpcClients: ConnectClients = ({ targets, timeoutMs }) => {
  const opened: Client[] = [];
  const lazily = <C extends Client>(create: () => C) => {
    let client: C | undefined;
    return () => {
      if (!client) {
        client = create();
        opened.push(client);
      }
      return client;
    };
  };
  const cacheMonitor = lazily(() => new CacheMonitorClient(targets["cache-monitor"], insecureCredentials()));
  const rulesSnapshot = lazily(() => new RulesSnapshotClient(targets["rules-snapshot"], insecureCredentials()));
  const promptAssembly = lazily(() => new PromptAssemblyClient(targets["prompt-assembly"], insecureCredentials()));

  const call = async <T>(service: ServiceName, method: string, send: () => Promise<T>): Promise<T> => {
    try {
      return await send();
    } catch (error) {
      if (!isServiceError(error)) throw error;
      throw new ServiceCallError({
        service,
        address: targets[service],
        method,
        code: error.code,
        details: error.details ?? "",
        timeoutMs,
      });
    }
  };
  // Reads and the snapshot delete are safe to retry on UNAVAILABLE; a rebuild is not retried.
  const read = { deadlineMs: timeoutMs, idempotent: true, maxAttempts: 2 };
  const once = { deadlineMs: timeoutMs };

  return {
    listCollapses: (request) =>
      call("cache-monitor", "ListCollapses", () => {
        const client = cacheMonitor();
        return callUnary(client, client.listCollapses, request, read);
      }),
    traceSession: (request) =>
      call("cache-monitor", "TraceSession", () => {
        const client = cacheMonitor();
        return callUnary(client, client.traceSession, request, read);
      }),
    getSnapshot: (request) =>
      call("rules-snapshot", "Get", () => {
        const client = rulesSnapshot();
        return callUnary(client, client.get, request, read);
      }),
    invalidateSnapshot: (request) =>
      call("rules-snapshot", "Invalidate", () => {
        const client = rulesSnapshot();
        return callUnary(client, client.invalidate, request, read);
      }),
    rebuildProjection: (request) =>
      call("prompt-assembly", "RebuildProjection", () => {
        const client = promptAssembly();
        return callUnary(client, client.rebuildProjection, request, once);
      }),
    close: () => {
      for (const client of opened) client.close();
    },
  };
};
