import { requireId } from "@prefix-guard/events/ids";
import {
  callerOf,
  type ServiceRegistration,
  trailingStringFieldSerializer,
  withResponseSerializer,
} from "@prefix-guard/grpc";
import {
  type BuildCompactionRequestRequest,
  BuildCompactionRequestResponse,
  type BuildRequestRequest,
  BuildRequestResponse,
  PromptAssemblyService,
  type RebuildProjectionRequest,
  type RebuildProjectionResponse,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { bodyJsonUtf8Of, type PromptBuilder } from "../../application/build-request/build-request";
import type { SessionViews } from "../../application/build-request/session-views";
import type { SessionEventsReader, SessionProjection } from "../../application/session-projection";

/**
 * Both build answers carry the body as `body_json` = 2: copied once, at the end, from the UTF-8 the
 * builder wrote it in (libs/grpc large-string-field.ts), never decoded into a string on the way.
 */
const BODY_JSON_FIELD_NUMBER = 2;
const promptAssemblyDefinition = withResponseSerializer(
  withResponseSerializer(
    PromptAssemblyService,
    "buildRequest",
    trailingStringFieldSerializer(
      (message: BuildRequestResponse) => BuildRequestResponse.encode(message).finish(),
      "bodyJson",
      BODY_JSON_FIELD_NUMBER,
      bodyJsonUtf8Of,
    ),
  ),
  "buildCompactionRequest",
  trailingStringFieldSerializer(
    (message: BuildCompactionRequestResponse) => BuildCompactionRequestResponse.encode(message).finish(),
    "bodyJson",
    BODY_JSON_FIELD_NUMBER,
    bodyJsonUtf8Of,
  ),
);

/**
 * Who may call what (README, "Security"): a harness builds for its own sessions; rebuilding a
 * projection is an operator's repair.
 */
export const PROMPT_ASSEMBLY_ACCESS = {
  buildRequest: ["harness"],
  buildCompactionRequest: ["harness"],
  rebuildProjection: ["operator"],
} as const satisfies ServiceRegistration["access"];

export function promptAssemblyRegistration(deps: {
  builder: PromptBuilder;
  projection: SessionProjection;
  views: SessionViews;
  sessions: SessionEventsReader;
  afterBuild: (request: BuildRequestRequest, response: BuildRequestResponse) => void;
}): ServiceRegistration {
  return {
    name: "prefixguard.assembly.v1.PromptAssembly",
    definition: promptAssemblyDefinition,
    access: PROMPT_ASSEMBLY_ACCESS,
    methods: {
      buildRequest: async (request: BuildRequestRequest, call: object) => {
        const response = await deps.builder.buildRequest(request, callerOf(call));
        deps.afterBuild(request, response);
        return response;
      },
      buildCompactionRequest: (request: BuildCompactionRequestRequest, call: object) =>
        deps.builder.buildCompactionRequest(request, callerOf(call)),
      rebuildProjection: async (request: RebuildProjectionRequest): Promise<RebuildProjectionResponse> => {
        requireId(request.sessionId, "session_id");
        const rebuilt = await deps.projection.rebuildSession(request.sessionId, deps.sessions);
        deps.views.forget(request.sessionId);
        return rebuilt;
      },
    } as ServiceRegistration["methods"],
  };
}
