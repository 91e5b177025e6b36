// The internal model of a prompt request, independent of any provider's wire format.
// Everything here is plain data: the serializers turn it into bytes, the window logic fills it.

export type Role = "user" | "assistant" | "tool" | "system";

export type ContentPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly mediaType: string; readonly url: string }
  | { readonly type: "tool_call"; readonly callId: string; readonly name: string; readonly argumentsJson: string }
  | { readonly type: "tool_result"; readonly callId: string; readonly text: string; readonly isError: boolean };

/** A message as the projection stores it (from MessageSaved / MessageDeleted events). */
export interface StoredMessage {
  readonly messageId: string;
  readonly seq: number;
  readonly role: Role;
  readonly content: readonly ContentPart[];
  /** YYYY-MM-DD in the session's timezone, computed once by the writer (seed 000 §3.2). */
  readonly localDate: string;
  readonly createdAtMs: number;
  readonly deleted: boolean;
}

/** What a session looks like to the builder. */
export interface SessionView {
  readonly sessionId: string;
  readonly kind: "main" | "side" | "embed";
  /** Compaction generation; 0 before the first compaction. */
  readonly generation: number;
  /** Messages up to and including this id are covered by `summary`. */
  readonly boundaryMessageId: string | null;
  /** Latest compaction summary, or the summary inherited from a full session (seed 002 §5.3). */
  readonly summary: string | null;
  /** Every message in seq order, deleted ones included (flagged). */
  readonly messages: readonly StoredMessage[];
  readonly lastSeq: number;
}

export interface SystemSection {
  readonly key: string;
  readonly text: string;
}

export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  /** Parsed JSON Schema. */
  readonly inputSchema: unknown;
}

/** A message as it goes to the model: a request copy, never stored. */
export interface ChatMessage {
  readonly role: Role;
  readonly content: readonly ContentPart[];
}

import type { ProviderCacheOptions } from "./provider-cache";

export type Locale = "zh-CN" | "en";

/** The provider-neutral request. `system` is in final order (harness sections, current-date, workspace-rules). */
export interface ChatRequest {
  readonly model: string;
  readonly system: readonly SystemSection[];
  readonly tools: readonly ToolDefinition[];
  readonly messages: readonly ChatMessage[];
  readonly maxOutputTokens?: number;
  /** Stable per-session key for providers that route caches by key (OpenAI prompt_cache_key). */
  readonly promptCacheKey?: string;
  /** Opt-in provider cache options that passed the model gate (provider-cache.ts); absent = none. */
  readonly providerCache?: ProviderCacheOptions;
}
