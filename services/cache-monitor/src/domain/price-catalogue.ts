// Built-in list prices per model family, USD per million tokens, consulted only when
// PRICE_CATALOGUE=builtin. An exact model in PRICE_MODEL_OVERRIDES always wins over it, and a model
// no family matches uses the PRICE_* defaults. Standard (non-batch, non-priority) tier, prompts up
// to the providers' long-context threshold. Where the numbers come from, as published in 2025–2026:
// - Anthropic: platform.claude.com/docs/en/about-claude/pricing — a 5-minute cache write costs
//   1.25× the input price, a 1-hour write 2×, a cache read 0.1×.
// - OpenAI: developers.openai.com/api/docs/pricing — cached input as listed; writes are not billed
//   apart (they cost the input price). GPT-5.x and GPT-4.1 also take 24-hour retention
//   (`prompt_cache_retention: "24h"`, extended prompt caching), at no extra price.
// - Google: ai.google.dev/gemini-api/docs/pricing (Gemini 2.5, prompts ≤ 200k tokens); context-cache
//   storage per hour is not a per-call price and is not modelled.
// - DeepSeek: api-docs.deepseek.com/quick_start/pricing (V3.2, from 2025-09-29: cache hit 0.028,
//   cache miss 0.28, output 0.42; writes are not billed apart).
// Prices change: check the providers' pages and override with PRICE_MODEL_OVERRIDES.

import type { PriceTable } from "./pricing";

export interface CatalogueEntry {
  /** Model-name prefix of the family, lower case (`claude-sonnet-4`, `gpt-5-mini`). */
  readonly family: string;
  readonly prices: PriceTable;
}

/** Anthropic's multipliers on the base input price. */
function anthropic(input: number, output: number): PriceTable {
  return {
    inputPerMillion: input,
    cachedInputPerMillion: round(input * 0.1),
    cacheWritePerMillion: round(input * 1.25),
    cacheWrite1hPerMillion: round(input * 2),
    outputPerMillion: output,
    retentions: ["5m", "1h"],
  };
}

/** Writes not billed apart; only the provider's default in-memory retention (judged as 5m). */
function plain(input: number, cached: number, output: number): PriceTable {
  return { inputPerMillion: input, cachedInputPerMillion: cached, outputPerMillion: output, retentions: ["5m"] };
}

/** OpenAI models that also take `prompt_cache_retention: "24h"`, whose writes cost the input price too. */
function openAiExtended(input: number, cached: number, output: number): PriceTable {
  return { ...plain(input, cached, output), cacheWrite24hPerMillion: input, retentions: ["5m", "24h"] };
}

const round = (n: number): number => Math.round(n * 1e6) / 1e6;

export const CATALOGUE_CURRENCY = "USD";

export const BUILTIN_CATALOGUE: readonly CatalogueEntry[] = [
  { family: "claude-opus-4-7", prices: anthropic(5, 25) },
  { family: "claude-opus-4-6", prices: anthropic(5, 25) },
  { family: "claude-opus-4-5", prices: anthropic(5, 25) },
  { family: "claude-opus-4", prices: anthropic(15, 75) },
  { family: "claude-sonnet-4", prices: anthropic(3, 15) },
  { family: "claude-3-7-sonnet", prices: anthropic(3, 15) },
  { family: "claude-3-5-sonnet", prices: anthropic(3, 15) },
  { family: "claude-haiku-4-5", prices: anthropic(1, 5) },
  { family: "claude-3-5-haiku", prices: anthropic(0.8, 4) },
  { family: "gpt-5.5", prices: openAiExtended(5, 0.5, 30) },
  { family: "gpt-5.4-mini", prices: openAiExtended(0.75, 0.075, 4.5) },
  { family: "gpt-5.4-nano", prices: openAiExtended(0.2, 0.02, 1.25) },
  { family: "gpt-5.4", prices: openAiExtended(2.5, 0.25, 15) },
  { family: "gpt-5.2", prices: openAiExtended(1.75, 0.175, 14) },
  { family: "gpt-5-mini", prices: openAiExtended(0.25, 0.025, 2) },
  { family: "gpt-5-nano", prices: openAiExtended(0.05, 0.005, 0.4) },
  { family: "gpt-5", prices: openAiExtended(1.25, 0.125, 10) },
  { family: "gpt-4.1-mini", prices: openAiExtended(0.4, 0.1, 1.6) },
  { family: "gpt-4.1-nano", prices: openAiExtended(0.1, 0.025, 0.4) },
  { family: "gpt-4.1", prices: openAiExtended(2, 0.5, 8) },
  { family: "gpt-4o-mini", prices: plain(0.15, 0.075, 0.6) },
  { family: "gpt-4o", prices: plain(2.5, 1.25, 10) },
  { family: "gemini-2.5-pro", prices: plain(1.25, 0.125, 10) },
  { family: "gemini-2.5-flash-lite", prices: plain(0.1, 0.01, 0.4) },
  { family: "gemini-2.5-flash", prices: plain(0.3, 0.03, 2.5) },
  { family: "deepseek-chat", prices: plain(0.28, 0.028, 0.42) },
  { family: "deepseek-reasoner", prices: plain(0.28, 0.028, 0.42) },
];

/**
 * The model name as the catalogue knows it: lower case, without a route prefix (`models/`,
 * `openai/`) or a Bedrock inference-profile prefix (`us.anthropic.`).
 */
export function catalogueName(model: string): string {
  const lower = model.trim().toLowerCase();
  const afterSlash = lower.slice(lower.lastIndexOf("/") + 1);
  const anthropicAt = afterSlash.indexOf("anthropic.");
  return anthropicAt >= 0 ? afterSlash.slice(anthropicAt + "anthropic.".length) : afterSlash;
}

const BOUNDARY = new Set(["-", ".", ":", "@", "_"]);

/** The longest family the model name starts with, at a name boundary (`gpt-5` matches `gpt-5.1`, not `gpt-50`). */
export function catalogueEntryFor(catalogue: readonly CatalogueEntry[], model: string): CatalogueEntry | null {
  const name = catalogueName(model);
  let best: CatalogueEntry | null = null;
  for (const entry of catalogue) {
    if (!name.startsWith(entry.family)) continue;
    const next = name.charAt(entry.family.length);
    if (next !== "" && !BOUNDARY.has(next)) continue;
    if (best === null || entry.family.length > best.family.length) best = entry;
  }
  return best;
}
