// SaveMessage requests and content parts for the session-events tests.
import { type ContentPart, Role } from "@prefix-guard/proto/common/v1/common";
import { SaveMessageRequest } from "@prefix-guard/proto/sessionevents/v1/session_events_service";

export const text = (value: string): ContentPart => ({ part: { $case: "text", value: { text: value } } });

/**
 * A user's message of one text part. `overrides` replace fields as given, after the defaults are
 * filled in, so a test can send a value `fromPartial` would have normalised.
 */
export function saveMessageRequest(
  sessionId: string,
  body: string,
  overrides: Partial<SaveMessageRequest> = {},
): SaveMessageRequest {
  return {
    ...SaveMessageRequest.fromPartial({ sessionId, role: Role.ROLE_USER, content: [text(body)] }),
    ...overrides,
  };
}
