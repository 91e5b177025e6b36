import { requireBoundedText, requireId } from "@prefix-guard/events/ids";
import type { ServiceRegistration } from "@prefix-guard/grpc";
import {
  type Decision,
  type GetRequest,
  type GetResponse,
  type InvalidateRequest,
  type ResolveRequest,
  RulesSnapshotService as RulesSnapshotDefinition,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import type { RulesSnapshotService } from "../../application/rules-snapshot-service";

/**
 * Who may call what (README, "Security"). Only prompt-assembly resolves: it does so for a session it
 * has loaded and shown to belong to its caller, so a harness can neither pin rules into another
 * tenant's session nor make rows for sessions that do not exist. Get shows pinned rules text, which
 * is content: operators, not SREs.
 */
export const RULES_SNAPSHOT_ACCESS = {
  resolve: ["peer"],
  invalidate: ["operator"],
  get: ["operator", "peer"],
} as const satisfies ServiceRegistration["access"];

function requireSessionId(sessionId: string): string {
  return requireId(sessionId, "session_id");
}

export function rulesSnapshotRegistration(
  service: RulesSnapshotService,
  onDecision: (decision: Decision) => void = () => undefined,
): ServiceRegistration {
  return {
    name: "prefixguard.rules.v1.RulesSnapshot",
    definition: RulesSnapshotDefinition,
    access: RULES_SNAPSHOT_ACCESS,
    methods: {
      resolve: async (request: ResolveRequest) => {
        const response = await service.resolveWorkspaceRules(request);
        onDecision(response.decision);
        return response;
      },
      invalidate: async (request: InvalidateRequest) => {
        const response = await service.invalidate(
          requireSessionId(request.sessionId),
          request.reason === "" ? "operator" : requireBoundedText(request.reason, "reason", 200).trim(),
        );
        return response;
      },
      get: async (request: GetRequest): Promise<GetResponse> => {
        const row = await service.getSnapshot(requireSessionId(request.sessionId));
        if (!row) return { found: false };
        return {
          found: true,
          snapshot: {
            sessionId: row.sessionId,
            workspace: row.workspace,
            rulesText: row.rulesText,
            rulesHash: row.rulesHash,
            sourcePath: row.sourcePath ?? "",
            sourceMtimeMs: row.sourceMtimeMs ?? 0,
            generation: row.generation,
            lastReportedDiskHash: row.lastReportedDiskHash ?? "",
            createdAtMs: row.createdAtMs,
            updatedAtMs: row.updatedAtMs,
          },
        };
      },
    } as ServiceRegistration["methods"],
  };
}
