// The body of an Anthropic Messages request: what anthropic-messages.ts writes and
// anthropic-breakpoints.ts marks. Its own file, so the breakpoint rule (shared with Bedrock Converse
// through alternating-turns.ts) does not import the format that uses it.

export interface AnthropicCacheControl {
  readonly type: "ephemeral";
  /** Opt-in (BuildRequest `cache.retention`); absent = the provider's default, 5 minutes. */
  readonly ttl?: "5m" | "1h";
}
export type AnthropicImageSource =
  | { readonly type: "url"; readonly url: string }
  | { readonly type: "base64"; readonly media_type: string; readonly data: string };
export type AnthropicContentBlock =
  | { readonly type: "text"; readonly text: string; readonly cache_control?: AnthropicCacheControl }
  | { readonly type: "image"; readonly source: AnthropicImageSource; readonly cache_control?: AnthropicCacheControl }
  | {
      readonly type: "tool_use";
      readonly id: string;
      readonly name: string;
      readonly input: Readonly<Record<string, unknown>>;
      readonly cache_control?: AnthropicCacheControl;
    }
  | {
      readonly type: "tool_result";
      readonly tool_use_id: string;
      readonly content: string;
      readonly is_error?: true;
      readonly cache_control?: AnthropicCacheControl;
    };
export interface AnthropicMessage {
  readonly role: "user" | "assistant";
  readonly content: readonly AnthropicContentBlock[];
}
export interface AnthropicSystemBlock {
  readonly type: "text";
  readonly text: string;
  readonly cache_control?: AnthropicCacheControl;
}
export interface AnthropicTool {
  readonly name: string;
  readonly description: string;
  readonly input_schema: unknown;
  readonly cache_control?: AnthropicCacheControl;
}
export interface AnthropicMessagesBody {
  readonly model: string;
  readonly max_tokens: number;
  readonly system?: readonly AnthropicSystemBlock[];
  readonly tools?: readonly AnthropicTool[];
  readonly messages: readonly AnthropicMessage[];
  /** Opt-in automatic caching (`cache.mode` "automatic"): Anthropic marks the last cacheable block itself. */
  readonly cache_control?: AnthropicCacheControl;
  /** Opt-in: ask for cache_miss_reason against the session's previous response. */
  readonly diagnostics?: { readonly previous_message_id: string };
}
