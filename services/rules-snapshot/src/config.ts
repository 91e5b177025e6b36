import { loadConfig, port, positiveMs, z } from "@prefix-guard/config";
import { commonConfigShape } from "@prefix-guard/runtime";

export const rulesSnapshotConfigSchema = z.object({
  ...commonConfigShape,
  GRPC_PORT: port(50052),
  DATABASE_URL: z.string().min(1).default("sqlite:.data/rules-snapshot.sqlite"),
  /** Bound on the DB part of Resolve; past it Resolve answers DEGRADED_RAW instead of failing. */
  RULES_DB_TIMEOUT_MS: positiveMs(300),
  /** Language of the section heading and the truncation notice. */
  RULES_LOCALE: z.enum(["zh-CN", "en"]).default("zh-CN"),
  CONSUMER_GROUP: z.string().min(1).default("rules-snapshot"),
  /** Memory for rules files read on Resolve, each re-read only when its size or times change. */
  RULES_FILE_CACHE_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(64 * 1024 * 1024),
});

export type RulesSnapshotConfig = z.infer<typeof rulesSnapshotConfigSchema>;

export function loadRulesSnapshotConfig(env: NodeJS.ProcessEnv = process.env): RulesSnapshotConfig {
  return loadConfig(rulesSnapshotConfigSchema, env);
}
