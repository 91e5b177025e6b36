// The provider catalogue (libs/providers/catalogue.json): what each provider and model family accepts,
// bills and reports for prompt caching, in one place. Before it, four lists were kept by hand (the
// retention and diagnostics model prefixes, the cache minimums, the price book and the usage parsers'
// field names) and drifted apart: gpt-5.5 was sent `in_memory`, which its API refuses, and gpt-5.6
// writes were priced as plain input. Pure: the file is read by load.ts.

import { ValidationError } from "@prefix-guard/errors";
import { z } from "zod";
import { JUDGED_RETENTIONS, judgedRetention, REQUEST_RETENTIONS } from "./retention";

const isoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "must be a date YYYY-MM-DD");
const url = z.string().regex(/^https:\/\/\S+$/, "must be an https URL");
const fieldName = z.string().min(1).max(200);

const providerSchema = z.strictObject({
  name: z.string().min(1).max(200),
  docs: url,
  checked: isoDate,
  /** prompt-assembly wire formats whose bodies this provider takes. */
  wireFormats: z.array(z.string().min(1).max(64)).max(16),
  /** Explicit cache breakpoints: the field that marks one, how many a request may write, how far back a lookup goes. */
  breakpoints: z
    .strictObject({
      field: fieldName,
      maxPerRequest: z.number().int().min(1).max(64),
      lookbackBlocks: z.number().int().min(1).max(10_000),
    })
    .nullable(),
  /** The request-level field that makes the provider place and move the breakpoint itself; null = none. */
  automaticCaching: fieldName.nullable(),
  /** Where the cache-miss diagnostics request goes; null = the provider has none. */
  diagnosticsField: fieldName.nullable(),
  /** Groups of request fields the provider refuses to see together. */
  exclusiveFields: z.array(z.array(fieldName).min(2).max(8)).max(16),
  /** "non_increasing": a breakpoint's TTL may not be longer than an earlier one's (tools → system → messages). */
  ttlOrder: z.enum(["non_increasing", "any"]),
});

const usageSchema = z.strictObject({
  provider: z.string().min(1).max(64),
  promptTokens: fieldName,
  cachedTokens: fieldName,
  /** null: the dialect reports no cache writes. */
  cacheWriteTokens: fieldName.nullable(),
  outputTokens: fieldName,
  docs: url,
  /** The provider's documented usage object: the fixture tests parse it. */
  example: z.record(z.string(), z.unknown()),
});

const retentionList = z.array(z.enum(REQUEST_RETENTIONS)).max(8);

const familySchema = z.strictObject({
  provider: z.string().min(1).max(64),
  /** Model-id prefix, lower case, matched at a name boundary (`gpt-5` matches `gpt-5.1`, not `gpt-50`). */
  family: z
    .string()
    .min(1)
    .max(100)
    .regex(/^[a-z0-9][a-z0-9._:@/-]*$/, "must be a lower-case model-id prefix"),
  /**
   * How a request opts into caching: Anthropic `cache_control` blocks, OpenAI `prompt_cache_retention`
   * (gpt-5.5 and earlier) or `prompt_cache_options` (gpt-5.6 and later), Bedrock `cachePoint`, or none.
   */
  cacheApi: z.enum(["cache_control", "prompt_cache_retention", "prompt_cache_options", "cache_point", "none"]),
  /** The retention values a build may opt into for this family ([] = none: the field is never written). */
  retentions: retentionList,
  /** What the cache lives for when a build opts into nothing: the expiry judgement assumes it. */
  defaultRetention: z.enum(JUDGED_RETENTIONS),
  /** Whether the model takes the provider's cache-miss diagnostics request. */
  diagnostics: z.boolean(),
  /** The smallest prefix, in tokens, the provider caches at all: no breakpoint goes below it. */
  minimumCacheableTokens: z.number().int().min(0).max(1_000_000),
  prices: z.strictObject({
    /** List prices in USD per million tokens. */
    inputPerMillion: z.number().finite().min(0),
    outputPerMillion: z.number().finite().min(0),
    /** A cache read costs this times the input price. */
    readMultiplier: z.number().finite().min(0).max(10),
    /** A cache write with each retention costs this times the input price; the retentions the provider sells. */
    writeMultipliers: z
      .partialRecord(z.enum(JUDGED_RETENTIONS), z.number().finite().min(0).max(10))
      .refine((multipliers) => Object.keys(multipliers).length > 0, "must price at least one retention"),
  }),
  docs: url,
  checked: isoDate,
});

const catalogueSchema = z.strictObject({
  $comment: z.string().optional(),
  providers: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), providerSchema),
  usage: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), usageSchema),
  families: z.array(familySchema).max(2_000),
});

/** An operator's file: the same shape, every part optional; entries replace the built-in ones they name. */
const overrideSchema = z.strictObject({
  $comment: z.string().optional(),
  providers: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), providerSchema).optional(),
  usage: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), usageSchema).optional(),
  families: z.array(familySchema).max(2_000).optional(),
});

export type ProviderEntry = z.infer<typeof providerSchema>;
export type UsageEntry = z.infer<typeof usageSchema>;
export type ModelFamily = z.infer<typeof familySchema>;
export interface ProviderCatalogue {
  readonly providers: Readonly<Record<string, ProviderEntry>>;
  readonly usage: Readonly<Record<string, UsageEntry>>;
  readonly families: readonly ModelFamily[];
}

/** `families[3]` → `families[3] (openai/gpt-5.6)`, so an error names the entry, not just its index. */
function pathOf(path: readonly PropertyKey[], input: unknown): string {
  let text = "";
  for (const [index, key] of path.entries()) {
    text += typeof key === "number" ? `[${key}]` : `${index === 0 ? "" : "."}${String(key)}`;
    if (index === 1 && path[0] === "families" && typeof key === "number") {
      const entry = (input as { families?: unknown[] }).families?.[key] as
        | { provider?: unknown; family?: unknown }
        | undefined;
      if (typeof entry?.provider === "string" && typeof entry.family === "string")
        text += ` (${entry.provider}/${entry.family})`;
    }
  }
  return text;
}

function parseWith<T>(schema: z.ZodType<T>, input: unknown, source: string): T {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue === undefined ? "" : pathOf(issue.path, input);
  throw new ValidationError(
    where === "" ? source : `${source}: ${where}`,
    issue?.message ?? "is not a provider catalogue",
  );
}

/** Cross-entry rules the schema cannot state: references resolve, no entry is listed twice, prices cover the retentions. */
function checkConsistency(catalogue: ProviderCatalogue, source: string): ProviderCatalogue {
  const seen = new Set<string>();
  catalogue.families.forEach((family, index) => {
    const where = `${source}: families[${index}] (${family.provider}/${family.family})`;
    if (catalogue.providers[family.provider] === undefined)
      throw new ValidationError(`${where}.provider`, `names no provider of the catalogue`);
    const key = `${family.provider}/${family.family}`;
    if (seen.has(key)) throw new ValidationError(where, "is listed twice");
    seen.add(key);
    if (family.cacheApi === "none" && family.retentions.length > 0)
      throw new ValidationError(`${where}.retentions`, "must be empty when cacheApi is none");
    if (family.prices.writeMultipliers[family.defaultRetention] === undefined)
      throw new ValidationError(
        `${where}.prices.writeMultipliers`,
        `must price the default retention ${family.defaultRetention}`,
      );
    for (const retention of family.retentions) {
      const judged = judgedRetention(retention);
      if (family.prices.writeMultipliers[judged] === undefined)
        throw new ValidationError(
          `${where}.prices.writeMultipliers`,
          `must price the retention ${retention} it accepts`,
        );
    }
  });
  for (const [id, usage] of Object.entries(catalogue.usage)) {
    if (catalogue.providers[usage.provider] === undefined)
      throw new ValidationError(`${source}: usage.${id}.provider`, "names no provider of the catalogue");
  }
  return catalogue;
}

/** @throws ValidationError naming the source, the entry and the field. */
export function parseProviderCatalogue(input: unknown, source = "catalogue"): ProviderCatalogue {
  return checkConsistency(parseWith(catalogueSchema, input, source), source);
}

/**
 * The built-in catalogue with an operator's file merged over it: a provider or usage entry with the
 * same id, and a family with the same provider and prefix, replaces the built-in one; others are added.
 *
 * @throws ValidationError naming the file, the entry and the field.
 */
export function mergeProviderCatalogue(base: ProviderCatalogue, override: unknown, source: string): ProviderCatalogue {
  const extra = parseWith(overrideSchema, override, source);
  const replaced = new Set((extra.families ?? []).map((family) => `${family.provider}/${family.family}`));
  return checkConsistency(
    {
      providers: { ...base.providers, ...extra.providers },
      usage: { ...base.usage, ...extra.usage },
      families: [
        ...base.families.filter((family) => !replaced.has(`${family.provider}/${family.family}`)),
        ...(extra.families ?? []),
      ],
    },
    source,
  );
}

/**
 * The model name as the catalogue knows it: lower case, without a route prefix (`models/`,
 * `openai/`) or a Bedrock inference-profile prefix (`us.anthropic.`), Anthropic's dotted versions
 * (`claude-3.5-haiku`, as gateways spell them) with dashes.
 */
export function catalogueModelName(model: string): string {
  const lower = model.trim().toLowerCase();
  const afterSlash = lower.slice(lower.lastIndexOf("/") + 1);
  const anthropicAt = afterSlash.indexOf("anthropic.");
  const name = anthropicAt >= 0 ? afterSlash.slice(anthropicAt + "anthropic.".length) : afterSlash;
  return name.startsWith("claude") ? name.replaceAll(".", "-") : name;
}

const BOUNDARY = new Set(["-", ".", ":", "@", "_"]);

/** The longest family prefix of `name` among `families`, at a name boundary. */
function longestFamily(families: readonly ModelFamily[], name: string): ModelFamily | null {
  let best: ModelFamily | null = null;
  for (const family of families) {
    if (!name.startsWith(family.family)) continue;
    const next = name.charAt(family.family.length);
    if (next !== "" && !BOUNDARY.has(next)) continue;
    if (best === null || family.family.length > best.family.length) best = family;
  }
  return best;
}

/**
 * The family of `model`. With `provider`, that provider's families are searched first; Bedrock
 * serves Anthropic's models, so a Bedrock lookup falls back to them. Without it, any provider's.
 */
export function familyOf(catalogue: ProviderCatalogue, model: string, provider?: string): ModelFamily | null {
  const name = catalogueModelName(model);
  if (provider === undefined) return longestFamily(catalogue.families, name);
  const own = longestFamily(
    catalogue.families.filter((family) => family.provider === provider),
    name,
  );
  if (own !== null || provider !== "bedrock") return own;
  return longestFamily(
    catalogue.families.filter((family) => family.provider === "anthropic"),
    name,
  );
}

/** The provider whose bodies a wire format is, by default (the first listing it). */
export function providerOfWireFormat(catalogue: ProviderCatalogue, wireFormat: string): string | null {
  for (const [id, provider] of Object.entries(catalogue.providers)) {
    if (provider.wireFormats.includes(wireFormat)) return id;
  }
  return null;
}
