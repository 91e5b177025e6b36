import { booleanFlag, loadConfig, port, positiveMs, z } from "@prefix-guard/config";
import { commonConfigShape } from "@prefix-guard/runtime";
import { parseCacheMinimums } from "./domain/cache-minimums";
import { parseModelPrefixes } from "./domain/provider-cache";

const address = z.string().regex(/^[A-Za-z0-9_.-]+:\d{1,5}$/, "must be host:port");

const modelPrefixes = (fallback: string) => z.string().default(fallback).transform(parseModelPrefixes);

export const promptAssemblyConfigSchema = z.object({
  ...commonConfigShape,
  GRPC_PORT: port(50053),
  DATABASE_URL: z.string().min(1).default("sqlite:.data/prompt-assembly.sqlite"),
  SESSION_EVENTS_ADDRESS: address.default("127.0.0.1:50051"),
  RULES_SNAPSHOT_ADDRESS: address.default("127.0.0.1:50052"),
  /** Deadline of the Resolve call made while a request is built. */
  RESOLVE_DEADLINE_MS: positiveMs(1_000),
  /** Deadline of each ReadEvents page during catch-up. */
  READ_EVENTS_DEADLINE_MS: positiveMs(2_000),
  /** Deadline of each GetDataKeys call (the keys that open sealed session content). */
  DATA_KEYS_DEADLINE_MS: positiveMs(2_000),
  /** Sessions' data keys held in memory (32 bytes and an id each; least recently used go first). */
  DATA_KEY_CACHE_ENTRIES: z.coerce.number().int().min(0).max(10_000_000).default(100_000),
  /**
   * Memory for session views kept between builds (least recently used go first). About 1 MiB holds a
   * 500-turn session with what the wire formats derive from it; 0 reads every view whole each build.
   */
  VIEW_CACHE_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(256 * 1024 * 1024),
  /** Memory for the last prefix fingerprint of each session (read back from the database when evicted). */
  PREFIX_CACHE_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(32 * 1024 * 1024),
  /**
   * Memory for each session's last rules section text: a build assembles its body with it while
   * Resolve is in flight and keeps the work only if Resolve answers the same text. 0 turns it off.
   */
  RULES_TEXT_CACHE_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(16 * 1024 * 1024),
  /** Builds recorded in one transaction at most (group commit of the prefix fingerprints). */
  PREFIX_GROUP_MAX: z.coerce.number().int().min(1).max(10_000).default(256),
  /** Index of the current-date section among the system sections (seed 000 §1.1: 5th). */
  CURRENT_DATE_POSITION: z.coerce.number().int().min(0).max(100).default(4),
  CANONICAL_TOOL_ORDER: booleanFlag(true),
  /**
   * JSON object of model-id prefix → minimum cacheable tokens, merged over the published table in
   * domain/cache-minimums.ts, e.g. {"claude-sonnet-5":2048}: a new model family's minimum without a release.
   */
  ANTHROPIC_CACHE_MINIMUMS: z
    .string()
    .default("{}")
    .transform((text, context) => {
      try {
        return parseCacheMinimums(JSON.parse(text) as unknown);
      } catch (error) {
        context.addIssue({ code: "custom", message: error instanceof Error ? error.message : String(error) });
        return z.NEVER;
      }
    }),
  CONSUMER_GROUP: z.string().min(1).default("prompt-assembly"),
  /**
   * Comma-separated model-id prefixes whose API takes the opt-in cache retention (BuildRequest
   * `cache.retention`: Anthropic cache_control.ttl, OpenAI prompt_cache_retention). Any other model
   * gets no retention field, whatever the request asks. "" = none.
   */
  CACHE_RETENTION_MODELS: modelPrefixes("claude-opus-4,claude-sonnet-4,claude-haiku-4-5,gpt-5,gpt-4.1"),
  /**
   * Comma-separated model-id prefixes whose API takes the cache-miss diagnostics request (BuildRequest
   * `cache.previous_response_id`: Anthropic diagnostics.previous_message_id, OpenAI
   * prompt_cache_options.comparison_response_id). Default none: list the models your provider account
   * has it for.
   */
  CACHE_DIAGNOSTICS_MODELS: modelPrefixes(""),
});

export type PromptAssemblyConfig = z.infer<typeof promptAssemblyConfigSchema>;

export function loadPromptAssemblyConfig(env: NodeJS.ProcessEnv = process.env): PromptAssemblyConfig {
  return loadConfig(promptAssemblyConfigSchema, env);
}
