import { readFileSync } from "node:fs";
import { type ChannelCredentials, type Client, credentials, Metadata, type ServiceError } from "@grpc/grpc-js";
import { callUnary } from "@prefix-guard/grpc";
import {
  PromptAssemblyClient,
  type RebuildProjectionRequest,
  type RebuildProjectionResponse,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import {
  type AdviseRetentionRequest,
  type AdviseRetentionResponse,
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
import type { ConnectionSecurity, ServiceName, ServiceTargets } from "./args";
import { ServiceCallError } from "./service-error";

/** What prefixctl needs from the services; failures are ServiceCallError. */
export interface PrefixctlClients {
  listCollapses(request: ListCollapsesRequest): Promise<ListCollapsesResponse>;
  traceSession(request: TraceSessionRequest): Promise<TraceSessionResponse>;
  adviseRetention(request: AdviseRetentionRequest): Promise<AdviseRetentionResponse>;
  getSnapshot(request: GetRequest): Promise<GetResponse>;
  invalidateSnapshot(request: InvalidateRequest): Promise<InvalidateResponse>;
  rebuildProjection(request: RebuildProjectionRequest): Promise<RebuildProjectionResponse>;
  /** Closes the channels that were opened, so the process can exit. */
  close(): void;
}

export interface ConnectOptions {
  readonly targets: ServiceTargets;
  readonly timeoutMs: number;
  readonly security?: ConnectionSecurity;
}

/** A file prefixctl was told to read and could not: the flag is named, nothing is sent. */
export class SecurityFileError extends Error {}

function readPem(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new SecurityFileError(`${flag} ${path}: ${(error as Error).message}`);
  }
}

/** Channel credentials and per-call metadata for the connection options given. */
export function channelSecurity(security: ConnectionSecurity | undefined): {
  credentials: ChannelCredentials;
  metadata: Metadata;
} {
  const metadata = new Metadata();
  if (security?.token) metadata.set("authorization", `Bearer ${security.token}`);
  if (!security?.tls) return { credentials: credentials.createInsecure(), metadata };
  const ca = security.caFile === null ? null : readPem(security.caFile, "--ca");
  const key = security.keyFile === null ? null : readPem(security.keyFile, "--key");
  const cert = security.certFile === null ? null : readPem(security.certFile, "--cert");
  return { credentials: credentials.createSsl(ca, key, cert), metadata };
}

export type ConnectClients = (options: ConnectOptions) => PrefixctlClients;

function isServiceError(error: unknown): error is ServiceError {
  return typeof error === "object" && error !== null && typeof (error as { code?: unknown }).code === "number";
}

/**
 * gRPC clients, each channel opened on first use: a command talks to one service and must not fail
 * or wait because another one is down.
 */
export const connectGrpcClients: ConnectClients = ({ targets, timeoutMs, security }) => {
  const channel = channelSecurity(security);
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
  const cacheMonitor = lazily(() => new CacheMonitorClient(targets["cache-monitor"], channel.credentials));
  const rulesSnapshot = lazily(() => new RulesSnapshotClient(targets["rules-snapshot"], channel.credentials));
  const promptAssembly = lazily(() => new PromptAssemblyClient(targets["prompt-assembly"], channel.credentials));

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
  const read = { deadlineMs: timeoutMs, idempotent: true, maxAttempts: 2, metadata: channel.metadata };
  const once = { deadlineMs: timeoutMs, metadata: channel.metadata };

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
    adviseRetention: (request) =>
      call("cache-monitor", "AdviseRetention", () => {
        const client = cacheMonitor();
        return callUnary(client, client.adviseRetention, request, read);
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
