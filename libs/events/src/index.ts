export { decodeEnvelope, type EnvelopeCodec, encodeEnvelope } from "./codec";
export { newEventId } from "./event-id";
export { sha256Hex, sha256HexOfParts } from "./hash";
export {
  decodeSessionEvent,
  encodeSessionEvent,
  SESSION_EVENT_SCHEMA_VERSION,
  type SessionEventPayload,
  type SessionEventType,
  sessionEventType,
} from "./session-envelope";
export { dlqTopic, type TopicName, Topics } from "./topics";
