import { booleanFlag, loadConfig, port, positiveMs, removedSetting, z } from "@prefix-guard/config";
import { commonConfigShape } from "@prefix-guard/runtime";

const address = z.string().regex(/^[A-Za-z0-9_.-]+:\d{1,5}$/, "must be host:port");

const CATALOGUE_INSTEAD =
  "set it per model family in PROVIDER_CATALOGUE_FILE (see docs/providers.md, `prefixctl providers`)";

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
  /**
   * Follow session-events' committed messages (FollowEvents) to extend the views held in memory, so
   * a build right after a SaveMessage needs no ReadEvents. Off: every such build reads the events.
   */
  FOLLOW_SESSION_EVENTS: booleanFlag(true),
  /**
   * Where to follow from: a host:port whose name resolves to every session-events replica (a
   * headless Service), one stream each. Default SESSION_EVENTS_ADDRESS: the one replica it reaches.
   */
  SESSION_EVENTS_FOLLOW_ADDRESS: address.optional(),
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
  RULES_TEXT_CACHE_BYTES: removedSetting(
    "RULES_TEXT_CACHE_BYTES",
    "the memory for each session's last rules section text is an internal, fixed at 16 MiB (a miss only loses the overlap with Resolve)",
  ),
  PREFIX_GROUP_MAX: removedSetting(
    "PREFIX_GROUP_MAX",
    "builds recorded per transaction is an internal, fixed at 256 (a larger group only delays the fingerprints of the builds that wait for it)",
  ),
  CURRENT_DATE_POSITION: removedSetting(
    "CURRENT_DATE_POSITION",
    "the current-date section is always the 5th system section (seed 000 §1.1); any other place only breaks the cached prefix earlier",
  ),
  CANONICAL_TOOL_ORDER: removedSetting(
    "CANONICAL_TOOL_ORDER",
    "tools are always sorted by name; the order a harness happens to send them in only breaks the cached prefix",
  ),
  /**
   * Re-pin an AGENTS.md edit held back for the cache's sake (RETAINED_DISK_CHANGED) on the first build
   * after the session was idle longer than the retention in force: its cached prefix is gone anyway.
   */
  REPIN_WHEN_COLD: booleanFlag(false),
  /**
   * The operator's provider catalogue file (JSON), merged over the built-in one (libs/providers/catalogue.json):
   * a family with the same provider and prefix replaces the built-in entry. Checked at start; an error
   * names the entry and field. Unset = the built-in catalogue.
   */
  PROVIDER_CATALOGUE_FILE: z.string().min(1).optional(),
  ANTHROPIC_CACHE_MINIMUMS: removedSetting("ANTHROPIC_CACHE_MINIMUMS", `minimumCacheableTokens: ${CATALOGUE_INSTEAD}`),
  CONSUMER_GROUP: z.string().min(1).default("prompt-assembly"),
  CACHE_RETENTION_MODELS: removedSetting("CACHE_RETENTION_MODELS", `retentions: ${CATALOGUE_INSTEAD}`),
  CACHE_DIAGNOSTICS_MODELS: removedSetting("CACHE_DIAGNOSTICS_MODELS", `diagnostics: ${CATALOGUE_INSTEAD}`),
});

export type PromptAssemblyConfig = z.infer<typeof promptAssemblyConfigSchema>;

export function loadPromptAssemblyConfig(env: NodeJS.ProcessEnv = process.env): PromptAssemblyConfig {
  return loadConfig(promptAssemblyConfigSchema, env);
}
