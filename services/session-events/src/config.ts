import { loadConfig, port, removedSetting, z } from "@prefix-guard/config";
import { commonConfigShape } from "@prefix-guard/runtime";

export const sessionEventsConfigSchema = z.object({
  ...commonConfigShape,
  GRPC_PORT: port(50051),
  DATABASE_URL: z.string().min(1).default("sqlite:.data/session-events.sqlite"),
  RELAY_BATCH_SIZE: removedSetting(
    "RELAY_BATCH_SIZE",
    "events per relay batch is an internal, fixed at 500 like every other service's relay",
  ),
  SAVE_GROUP_MAX: removedSetting(
    "SAVE_GROUP_MAX",
    "SaveMessages appended per transaction is an internal, fixed at 128 (messages saved while a group is written go together in the next)",
  ),
  SESSION_CHARACTER_QUOTA: z.coerce.number().int().min(1_000).max(10_000_000).default(200_000),
  SESSION_MAX_SERIALIZED_BYTES: z.coerce.number().int().min(10_000).max(1_073_741_824).optional(),
  /**
   * Sessions with no activity for this many days are erased like a DeleteSession; 0 (the
   * default) keeps them forever. Fractions are allowed (0.5 = 12 hours).
   */
  SESSION_RETENTION_DAYS: z.coerce.number().min(0).max(36_500).default(0),
  /** How often the retention sweep looks for idle sessions. */
  SESSION_RETENTION_SWEEP_MS: z.coerce.number().int().min(100).max(86_400_000).default(600_000),
  /** Sessions' data keys held in memory for sealing writes (least recently used out). */
  SESSION_DATA_KEY_CACHE_SIZE: z.coerce.number().int().min(1).max(10_000_000).default(100_000),
  /** FollowEvents streams this replica serves at most (one per prompt-assembly replica); 0 serves none. */
  FEED_MAX_FOLLOWERS: z.coerce.number().int().min(0).max(1_024).default(64),
});

export type SessionEventsConfig = z.infer<typeof sessionEventsConfigSchema>;

export function loadSessionEventsConfig(env: NodeJS.ProcessEnv = process.env): SessionEventsConfig {
  return loadConfig(sessionEventsConfigSchema, env);
}
