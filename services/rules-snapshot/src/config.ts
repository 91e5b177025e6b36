import { loadConfig, port, positiveMs, z } from "@prefix-guard/config";
import { commonConfigShape } from "@prefix-guard/runtime";
import type { RulesFileConfinement } from "./domain/validation";

function commaList(value: string): string[] {
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: a path with control characters is never a real directory
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

/** Absolute directories; repeated and trailing slashes dropped so containment is a prefix test. */
const rulesFileRoots = z
  .string()
  .default("")
  .transform(commaList)
  .superRefine((roots, ctx) => {
    for (const root of roots) {
      const segments = root.split("/");
      if (!root.startsWith("/") || CONTROL_CHARACTERS.test(root) || segments.some((s) => s === "." || s === "..")) {
        ctx.addIssue({
          code: "custom",
          message: `each root must be an absolute directory without . or .. segments, got ${JSON.stringify(root)}`,
        });
      }
    }
  })
  .transform((roots) =>
    roots.map(
      (root) =>
        `/${root
          .split("/")
          .filter((segment) => segment !== "")
          .join("/")}`,
    ),
  );

const rulesFileNames = z
  .string()
  .default("AGENTS.md")
  .transform(commaList)
  .superRefine((names, ctx) => {
    if (names.length === 0) ctx.addIssue({ code: "custom", message: "must name at least one file" });
    for (const name of names) {
      if (name.includes("/") || name === "." || name === ".." || CONTROL_CHARACTERS.test(name)) {
        ctx.addIssue({
          code: "custom",
          message: `each entry must be a file name (no "/"), got ${JSON.stringify(name)}`,
        });
      }
    }
  });

export const rulesSnapshotConfigSchema = z.object({
  ...commonConfigShape,
  GRPC_PORT: port(50052),
  DATABASE_URL: z.string().min(1).default("sqlite:.data/rules-snapshot.sqlite"),
  /** Bound on the DB part of Resolve; past it Resolve answers DEGRADED_RAW instead of failing. */
  RULES_DB_TIMEOUT_MS: positiveMs(300),
  /** Language of the section heading and the truncation notice. */
  RULES_LOCALE: z.enum(["zh-CN", "en"]).default("zh-CN"),
  CONSUMER_GROUP: z.string().min(1).default("rules-snapshot"),
  /**
   * session.events.v1 is read for its few cleanup events (compaction, deletion, promotion), which
   * nothing waits for: a fetch is answered once this many bytes wait, or after
   * CLEANUP_FETCH_MAX_WAIT_MS, so the consumer takes a few large batches instead of one per write.
   */
  CLEANUP_FETCH_MIN_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(64 * 1024 * 1024)
    .default(256 * 1024),
  CLEANUP_FETCH_MAX_WAIT_MS: z.coerce.number().int().min(10).max(10_000).default(500),
  /** Memory for rules files read on Resolve, each re-read only when its size or times change. */
  RULES_FILE_CACHE_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(64 * 1024 * 1024),
  /**
   * Comma-separated directories a rules file must lie in, besides its session's workspace. Empty:
   * the workspace alone confines, and only while rules-snapshot listens on loopback.
   */
  RULES_FILE_ROOTS: rulesFileRoots,
  /** Comma-separated base names a rules file may have. */
  RULES_FILE_NAMES: rulesFileNames,
});

export type RulesSnapshotConfig = z.infer<typeof rulesSnapshotConfigSchema>;

export function loadRulesSnapshotConfig(env: NodeJS.ProcessEnv = process.env): RulesSnapshotConfig {
  return loadConfig(rulesSnapshotConfigSchema, env);
}

/**
 * The bind address only reaches this machine: 127.0.0.0/8, ::1 (any spelling, IPv4-mapped too) or
 * localhost. Anything else (0.0.0.0, ::, a name or a LAN address) may be reached by other machines.
 */
export function isLoopbackHost(host: string): boolean {
  const name = host.trim().toLowerCase();
  if (name === "localhost" || name === "localhost.") return true;
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name);
  if (v4 !== null) return v4.slice(1).every((octet) => Number(octet) <= 255) && v4[1] === "127";
  if (!name.includes(":")) return false;
  const bare = name.startsWith("[") && name.endsWith("]") ? name.slice(1, -1) : name;
  let canonical: string;
  try {
    // The URL parser writes IPv6 in its canonical compressed form: ::1, ::ffff:7f00:1 ...
    canonical = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  } catch {
    return false;
  }
  return canonical === "::1" || /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(canonical);
}

/**
 * Where rules files may be read from. Beyond loopback a caller's `workspace` is only its word, so
 * without roots no file is read at all; on loopback the caller is a local user and the workspace
 * alone confines (what `make run` relies on).
 */
export function rulesFileConfinement(
  config: Pick<RulesSnapshotConfig, "GRPC_HOST" | "RULES_FILE_ROOTS" | "RULES_FILE_NAMES">,
): RulesFileConfinement {
  return {
    names: config.RULES_FILE_NAMES,
    roots: config.RULES_FILE_ROOTS,
    fileSourcesEnabled: config.RULES_FILE_ROOTS.length > 0 || isLoopbackHost(config.GRPC_HOST),
  };
}
