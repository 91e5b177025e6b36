import { ValidationError } from "@prefix-guard/errors";
import { z } from "zod";

export { z };

/**
 * Parses the environment once at start. A bad value fails start-up with every offending variable
 * named, instead of surfacing later as a confusing runtime error.
 */
export function loadConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join(".") || "(env)"}: ${issue.message}`);
  const first = result.error.issues[0];
  throw new ValidationError(first ? first.path.join(".") : "env", `invalid configuration: ${problems.join("; ")}`);
}

/** Common fields: a port on loopback, an optional Kafka broker list, a database URL. */
export const port = (fallback: number) => z.coerce.number().int().min(0).max(65_535).default(fallback);
export const positiveMs = (fallback: number) => z.coerce.number().int().positive().max(600_000).default(fallback);
export const booleanFlag = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0", "yes", "no"])
    .default(fallback ? "true" : "false")
    .transform((v) => v === "true" || v === "1" || v === "yes");
export const brokerList = z
  .string()
  .min(1)
  .transform((s) =>
    s
      .split(",")
      .map((b) => b.trim())
      .filter((b) => b.length > 0),
  )
  .refine((list) => list.every((b) => /^[A-Za-z0-9_.-]+:\d{1,5}$/.test(b)), "each broker must be host:port");

/** The transport between services: `embedded` (in process, SQLite-backed log) or `kafka`. */
export const transportKind = z.enum(["embedded", "kafka"]).default("embedded");

/** Values safe to print: anything that looks like a secret is replaced. */
export function redactConfig(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (/password|secret|token|key$/i.test(key)) out[key] = value === undefined ? undefined : "[redacted]";
    else if (typeof value === "string") out[key] = value.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
    else out[key] = value;
  }
  return out;
}

/**
 * A setting that was removed: set, it stops start-up naming what replaced it, so a deployment that
 * still sets it does not silently run without what it meant. The value is never echoed.
 */
export const removedSetting = (name: string, replacement: string) =>
  z.undefined({ error: `${name} was removed: ${replacement}` }).optional();
