import { loadConfig, port, z } from "@prefix-guard/config";
import { commonConfigShape } from "@prefix-guard/runtime";

export const sessionEventsConfigSchema = z.object({
  ...commonConfigShape,
  GRPC_PORT: port(50051),
  DATABASE_URL: z.string().min(1).default("sqlite:.data/session-events.sqlite"),
  RELAY_BATCH_SIZE: z.coerce.number().int().min(1).max(5_000).default(500),
  /** SaveMessages appended in one transaction at most (group commit of the messages saved at the same time). */
  SAVE_GROUP_MAX: z.coerce.number().int().min(1).max(1_000).default(128),
  SESSION_CHARACTER_QUOTA: z.coerce.number().int().min(1_000).max(10_000_000).default(200_000),
  SESSION_MAX_SERIALIZED_BYTES: z.coerce.number().int().min(10_000).max(1_073_741_824).optional(),
});

export type SessionEventsConfig = z.infer<typeof sessionEventsConfigSchema>;

export function loadSessionEventsConfig(env: NodeJS.ProcessEnv = process.env): SessionEventsConfig {
  return loadConfig(sessionEventsConfigSchema, env);
}
