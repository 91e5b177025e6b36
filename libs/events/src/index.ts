export {
  CLOUDEVENTS_SPEC_VERSION,
  type CloudEventAttributes,
  CloudEventHeader,
  type CloudEventSubject,
  cloudEventAttributes,
  cloudEventDataSchema,
  cloudEventHeaders,
  cloudEventType,
  EVENT_CONTENT_TYPE,
  EVENT_CONTRACT_VERSION,
  type EventProducer,
  TOPIC_ENVELOPES,
} from "./cloudevents";
export { decodeEnvelope, type EnvelopeCodec, encodeEnvelope } from "./codec";
export { newEventId } from "./event-id";
export { type Sha256Checkpoint, sha256Hex, sha256HexOfParts, sha256HexResumable } from "./hash";
export {
  checkJsonLimits,
  DEFAULT_JSON_LIMITS,
  type JsonLimits,
  MAX_JSON_DEPTH,
  MAX_JSON_ELEMENTS,
} from "./json-limits";
export {
  DATA_KEY_BYTES,
  type DataKey,
  newDataKey,
  openFields,
  sealedAad,
  sealedContentOf,
  sealFields,
  withOpenedContent,
} from "./sealed-content";
export {
  decodeSessionEvent,
  encodeSessionEvent,
  SESSION_EVENT_SCHEMA_VERSION,
  type SessionEventPayload,
  type SessionEventType,
  sessionEventType,
} from "./session-envelope";
export { dlqTopic, type TopicName, Topics } from "./topics";
