/**
 * Size limits of the session-events service, in one place so the gRPC server, the tests and the
 * capacity decision agree on them.
 */

/**
 * Per-session quota of content characters (code points of text, tool-call arguments and tool
 * results). Thinking text is NOT counted: it never goes back to a model, and counting it filled
 * sessions after ~19 turns (session-capacity note, BUG-732).
 */
export const CHARACTER_QUOTA = 200_000;

/**
 * Physical cap on the whole serialized session (UTF-8 bytes of the JSON array of every stored
 * message, thinking text and deleted messages included): thinking text no longer counts toward the
 * quota, so something else has to bound what one session can make us store.
 */
export const MAX_SERIALIZED_SESSION_BYTES = 4 * 1024 * 1024;

/** One message, serialized as it is stored (content JSON + thinking text), in UTF-8 bytes. */
export const MAX_MESSAGE_BYTES = 1024 * 1024;

/**
 * Largest request the gRPC server should accept (`grpc.max_receive_message_length`): a message at
 * MAX_MESSAGE_BYTES plus protobuf framing fits with room to spare.
 */
export const MAX_REQUEST_BYTES = 2 * MAX_MESSAGE_BYTES;

export const MAX_CONTENT_PARTS = 100;
export const MAX_WORKSPACE_CHARS = 1024;
export const MAX_TOOL_NAME_CHARS = 128;
export const MAX_MEDIA_TYPE_CHARS = 64;

/** Summary text a compaction may submit before scrubbing; the stored text is capped at SUMMARY_MAX_CHARS. */
export const MAX_SUMMARY_INPUT_CHARS = 20_000;

/** Stored summaries are at most this many code points (seed 002: ≤ 800 汉字). */
export const SUMMARY_MAX_CHARS = 800;

export const DEFAULT_TIMEZONE = "Asia/Shanghai";

export const READ_EVENTS_DEFAULT_LIMIT = 500;
export const READ_EVENTS_MAX_LIMIT = 1000;
/** Session ids per GetDataKeys: a consumer batch asks once for the keys it lacks. */
export const DATA_KEYS_MAX_IDS = 100;

/** The capacity limits a deployment (or a test) may tighten; validation caps stay fixed. */
export interface SessionLimits {
  readonly characterQuota: number;
  readonly maxSerializedSessionBytes: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  characterQuota: CHARACTER_QUOTA,
  maxSerializedSessionBytes: MAX_SERIALIZED_SESSION_BYTES,
};
