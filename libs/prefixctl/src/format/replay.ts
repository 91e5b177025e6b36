import type { RebuildProjectionResponse } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";

export function formatReplay(response: RebuildProjectionResponse, sessionId: string): string {
  return `Rebuilt the prompt-assembly projection of session ${sessionId} from session-events: ${response.eventsApplied} event${response.eventsApplied === 1 ? "" : "s"} applied, projection seq ${response.projectionSeq}.\n`;
}

export function replayToJson(response: RebuildProjectionResponse, sessionId: string) {
  return { session_id: sessionId, projection_seq: response.projectionSeq, events_applied: response.eventsApplied };
}
