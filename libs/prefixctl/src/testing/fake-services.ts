// Fake CacheMonitor / RulesSnapshot / PromptAssembly handlers on one real gRPC server, for the
// integration tests: the wire, deadlines and status mapping are real, the answers are canned.
import { NotFoundError, ValidationError } from "@prefix-guard/errors";
import { type GrpcServerOptions, type RunningGrpcServer, startGrpcServer } from "@prefix-guard/grpc";
import { localTestAuthenticator, openToEveryRole } from "@prefix-guard/grpc/testing";
import {
  PromptAssemblyService,
  type RebuildProjectionRequest,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import {
  type AdviseRetentionRequest,
  type AdviseRetentionResponse,
  CacheMonitorService,
  type ListCollapsesRequest,
  type ListCollapsesResponse,
  type TraceSessionRequest,
  type TraceSessionResponse,
} from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import {
  type GetRequest,
  type InvalidateRequest,
  RulesSnapshotService,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { build, collapseRow, snapshot, usage } from "./fixtures";

export interface FakeServices {
  readonly server: RunningGrpcServer;
  readonly address: string;
  /** Requests as the server decoded them, per method. */
  readonly received: { method: string; request: unknown }[];
  /** Flags pointing every prefixctl client at this server. */
  readonly targetFlags: string[];
  shutdown(): Promise<void>;
}

// startGrpcServer only logs unexpected handler errors; the tests look at responses, not logs.
const quietLogger = (() => {
  const logger: Record<string, unknown> = {};
  for (const level of ["fatal", "error", "warn", "info", "debug", "trace"]) logger[level] = () => undefined;
  logger.child = () => logger;
  return logger as unknown as GrpcServerOptions["logger"];
})();

export const collapsesResponse: ListCollapsesResponse = {
  collapses: [
    collapseRow("811"),
    collapseRow("435", { changedSections: [], cause: "", attribution: "provider_only", extraCost: 0.5 }),
  ],
  totals: [
    { section: "workspace-rules", collapses: 110, extraCost: 95.92 },
    { section: "", collapses: 36, extraCost: 18 },
  ],
  totalCollapses: 146,
  totalExtraCost: 113.92,
  causeTotals: [
    { causeCode: "section_changed:workspace-rules", collapses: 110, extraCost: 95.92 },
    { causeCode: "ttl_expired", collapses: 36, extraCost: 18 },
  ],
};

export const adviseResponse: AdviseRetentionResponse = {
  sessionId: "811",
  defaultRetention: "5m",
  calls: 5,
  currency: "USD",
  recordedCost: 1.9125,
  retentions: [
    { retention: "5m", cost: 1.9125, hits: 0, misses: 5, offered: true },
    { retention: "1h", cost: 0.72, hits: 4, misses: 1, offered: true },
    { retention: "24h", cost: 0.72, hits: 4, misses: 1, offered: false },
  ],
  recommended: "1h",
  savingVsDefault: 1.1925,
  savingVsNext: 1.1925,
  workspace: "",
  sessions: 1,
};

export const traceResponse: TraceSessionResponse = {
  builds: [
    build({
      requestId: "aaaaaaaaaaaa-first",
      firstBuild: true,
      prefixChanged: true,
      rulesDecision: "PINNED",
      hasUsage: true,
      usage: usage({ reportedCost: 0.1 }),
      cost: 0.1,
      attribution: "agree",
    }),
    build({
      requestId: "bbbbbbbbbbbb-ttl",
      hasUsage: true,
      usage: usage({ promptTokens: 447_652, cachedTokens: 9_216 }),
      cost: 0.905,
      collapsed: true,
      attribution: "provider_only",
    }),
  ],
};

export async function startFakeServices(): Promise<FakeServices> {
  const received: FakeServices["received"] = [];
  const note = (method: string, request: unknown) => received.push({ method, request });
  const server = await startGrpcServer({
    authenticator: localTestAuthenticator(),
    host: "127.0.0.1",
    port: 0,
    logger: quietLogger,
    services: [
      {
        name: "prefixguard.monitor.v1.CacheMonitor",
        definition: CacheMonitorService,
        access: openToEveryRole(CacheMonitorService),
        methods: {
          recordUsage: async () => ({ cost: 0 }),
          listCollapses: async (request: ListCollapsesRequest) => {
            note("ListCollapses", request);
            if (request.sessionId === "bad id") throw new ValidationError("session_id", "must not contain spaces");
            return collapsesResponse;
          },
          traceSession: async (request: TraceSessionRequest) => {
            note("TraceSession", request);
            if (request.sessionId === "slow") await new Promise((resolve) => setTimeout(resolve, 1_000));
            if (request.sessionId === "missing")
              throw new NotFoundError(`session ${request.sessionId} has no recorded builds`);
            return traceResponse;
          },
          adviseRetention: async (request: AdviseRetentionRequest) => {
            note("AdviseRetention", request);
            return { ...adviseResponse, sessionId: request.sessionId };
          },
        },
      },
      {
        name: "prefixguard.rules.v1.RulesSnapshot",
        definition: RulesSnapshotService,
        access: openToEveryRole(RulesSnapshotService),
        methods: {
          resolve: async () => {
            throw new Error("not used by prefixctl");
          },
          get: async (request: GetRequest) => {
            note("Get", request);
            return request.sessionId === "811" ? { found: true, snapshot: snapshot() } : { found: false };
          },
          invalidate: async (request: InvalidateRequest) => {
            note("Invalidate", request);
            return { removed: request.sessionId === "811" };
          },
        },
      },
      {
        name: "prefixguard.assembly.v1.PromptAssembly",
        definition: PromptAssemblyService,
        access: openToEveryRole(PromptAssemblyService),
        methods: {
          buildRequest: async () => {
            throw new Error("not used by prefixctl");
          },
          buildCompactionRequest: async () => {
            throw new Error("not used by prefixctl");
          },
          rebuildProjection: async (request: RebuildProjectionRequest) => {
            note("RebuildProjection", request);
            return { projectionSeq: 621, eventsApplied: 621 };
          },
        },
      },
    ],
  });
  return {
    server,
    address: server.address,
    received,
    targetFlags: [
      "--cache-monitor",
      server.address,
      "--rules-snapshot",
      server.address,
      "--prompt-assembly",
      server.address,
    ],
    shutdown: () => server.shutdown(500),
  };
}
