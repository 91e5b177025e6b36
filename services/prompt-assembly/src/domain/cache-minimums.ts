// The smallest prefix Anthropic will cache, per model. A cache_control marker on a shorter
// prefix is accepted but silently not cached: it only uses up one of the four breakpoint slots
// and pays nothing back, so the serializer never places one there.
//
// Source: the minimum cacheable prompt lengths published in Anthropic's prompt caching
// documentation ("Cache limitations"). They change with new model families, so the table is data,
// overridable per deployment (ANTHROPIC_CACHE_MINIMUMS) without a release:
//   Claude Opus 4.6, Opus 4.5, Haiku 4.5               4096
//   Claude Sonnet 4.6, Haiku 3.5, Haiku 3              2048
//   every other Claude model (Sonnet 4.5/4/3.7, Opus 4.1/4/3 ...)  1024 (the default)
// Models outside the table (including non-Claude models behind an Anthropic-compatible
// endpoint) get the default.

import { ValidationError } from "@prefix-guard/errors";

/** Used for any model no table entry matches. */
export const DEFAULT_CACHE_MINIMUM_TOKENS = 1024;

/** Model id prefix → minimum cacheable prefix in tokens. The longest matching prefix wins. */
export const ANTHROPIC_CACHE_MINIMUMS: Readonly<Record<string, number>> = {
  "claude-opus-4-6": 4096,
  "claude-opus-4-5": 4096,
  "claude-haiku-4-5": 4096,
  "claude-sonnet-4-6": 2048,
  "claude-3-5-haiku": 2048,
  "claude-3-haiku": 2048,
};

// Bedrock ("anthropic.claude-…", "us.anthropic.claude-…") and gateway ("anthropic/claude-3.5-haiku")
// spellings name the same models; the table is keyed by the bare Anthropic id, dashes for dots.
const VENDOR_PREFIX = /^(?:[a-z]{2,4}\.)?anthropic[./]/;

/** The model id as the table is keyed: lower case, no Bedrock or gateway vendor prefix, "." as "-". */
export function normalizeModelId(model: string): string {
  return model.trim().toLowerCase().replace(VENDOR_PREFIX, "").replaceAll(".", "-");
}

/**
 * Minimum cacheable prefix for `model`: the entry with the longest prefix of the normalized model
 * id, looked up in `overrides` merged over the published table (an override with the same prefix
 * replaces the published value), else `fallback`.
 */
export function cacheMinimumTokensFor(
  model: string,
  overrides: Readonly<Record<string, number>> = {},
  fallback: number = DEFAULT_CACHE_MINIMUM_TOKENS,
): number {
  const id = normalizeModelId(model);
  const table = { ...ANTHROPIC_CACHE_MINIMUMS, ...normalizeTable(overrides) };
  let best: { prefix: string; tokens: number } | null = null;
  for (const [prefix, tokens] of Object.entries(table)) {
    if (id.startsWith(prefix) && (best === null || prefix.length > best.prefix.length)) best = { prefix, tokens };
  }
  return best?.tokens ?? fallback;
}

/**
 * Validates a model-prefix → tokens table (as read from configuration) and normalizes its keys.
 *
 * @throws ValidationError naming the first bad entry.
 */
export function parseCacheMinimums(value: unknown, field = "ANTHROPIC_CACHE_MINIMUMS"): Record<string, number> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ValidationError(field, "must be a JSON object of model prefix → tokens");
  }
  const table: Record<string, number> = {};
  for (const [prefix, tokens] of Object.entries(value)) {
    const key = normalizeModelId(prefix);
    if (key.length === 0) throw new ValidationError(field, `model prefix ${JSON.stringify(prefix)} is empty`);
    if (typeof tokens !== "number" || !Number.isSafeInteger(tokens) || tokens < 0) {
      throw new ValidationError(`${field}.${prefix}`, `must be an integer >= 0, got ${JSON.stringify(tokens)}`);
    }
    table[key] = tokens;
  }
  return table;
}

function normalizeTable(overrides: Readonly<Record<string, number>>): Record<string, number> {
  return parseCacheMinimums(overrides, "cacheMinimums");
}
