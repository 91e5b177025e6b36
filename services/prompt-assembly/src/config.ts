import { booleanFlag, loadConfig, port, positiveMs, z } from "@prefix-guard/config";
import { commonConfigShape } from "@prefix-guard/runtime";
import { parseCacheMinimums } from "./domain/cache-minimums";

const address = z.string().regex(/^[A-Za-z0-9_.-]+:\d{1,5}$/, "must be host:port");

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
  /** How long BuildRequest waits for the projection to reach min_seq before catching up itself. */
  MIN_SEQ_WAIT_MS: positiveMs(1_000),
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
   * "stabilised" is the product. "naive" is the benchmark baseline, the seeds' "before" (today's
   * date, AGENTS.md reread every build, in-memory prefix monitor); only bench/src/replay sets it.
   */
  ASSEMBLY_POLICY: z.enum(["stabilised", "naive"]).default("stabilised"),
});

export type PromptAssemblyConfig = z.infer<typeof promptAssemblyConfigSchema>;

export function loadPromptAssemblyConfig(env: NodeJS.ProcessEnv = process.env): PromptAssemblyConfig {
  return loadConfig(promptAssemblyConfigSchema, env);
}
