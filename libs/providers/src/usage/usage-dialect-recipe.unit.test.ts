// CONTRIBUTING.md's "Add a usage dialect" recipe, followed for a toy dialect: a parser (the file a
// new dialect would be), its line in a dialect table (createUsageDialects, as the built-in table is
// made), and its catalogue entry with the provider's documented example, merged the way an
// operator's PROVIDER_CATALOGUE_FILE is. The built-in table and the catalogue must list the same
// dialects, so a dialect added to one and not the other fails here.

import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { mergeProviderCatalogue } from "../catalogue";
import { BUILTIN_PROVIDER_CATALOGUE } from "../index";
import { createUsageDialects, isRawProvider, parseProviderUsage, SUPPORTED_PROVIDERS, type UsageParser } from "./index";
import { usageAndEnvelope } from "./json-fields";

// Step 1: the parser. A toy provider reporting {"usage": {"input": n, "cache_hit": h, "output": k}}.
const parseToyUsage: UsageParser = (json) => {
  const { usage } = usageAndEnvelope(json, "usage");
  const cached = usage.requiredCount("cache_hit");
  return {
    promptTokens: usage.requiredCount("input"),
    cachedTokens: cached,
    cacheCreationTokens: 0,
    cacheCreation1hTokens: 0,
    completionTokens: usage.requiredCount("output"),
    providerReport: null,
  };
};

// Step 2: its line in the table.
const dialects = createUsageDialects({
  anthropic: (json: string) => parseProviderUsage("anthropic", json),
  toy: parseToyUsage,
});

// Step 3: its catalogue entry (usage.<name>), with the example from the provider's documentation.
const toyEntry = {
  usage: {
    toy: {
      provider: "deepseek",
      promptTokens: "usage.input",
      cachedTokens: "usage.cache_hit",
      cacheWriteTokens: null,
      outputTokens: "usage.output",
      docs: "https://example.com/toy/usage",
      example: { usage: { input: 2048, cache_hit: 1536, output: 12 } },
    },
  },
};

describe("the usage dialect recipe", () => {
  it("a parser and one table line make the dialect parse by its name; other names are refused, naming the list", () => {
    expect(dialects.providers).toEqual(["anthropic", "toy"]);
    expect(dialects.isRawProvider("toy")).toBe(true);
    expect(dialects.parse("toy", '{"usage":{"input":10,"cache_hit":4,"output":2}}')).toMatchObject({
      promptTokens: 10,
      cachedTokens: 4,
      completionTokens: 2,
    });
    expect(() => dialects.parse("toyy", "{}")).toThrow(ValidationError);
    expect(() => dialects.parse("toyy", "{}")).toThrow(/raw\.provider: must be one of anthropic, toy/);
    expect(() => dialects.parse("toy", '{"usage":{"input":10}}')).toThrow(/cache_hit/);
  });

  it("its catalogue entry is accepted, and its documented example parses to the counts its field names say", () => {
    const catalogue = mergeProviderCatalogue(BUILTIN_PROVIDER_CATALOGUE, toyEntry, "toy-catalogue.json");
    const entry = catalogue.usage.toy;
    expect(entry).toBeDefined();
    const parsed = dialects.parse("toy", JSON.stringify(entry?.example));
    expect(parsed).toMatchObject({ promptTokens: 2048, cachedTokens: 1536, completionTokens: 12 });
  });

  it("the built-in table and the built-in catalogue list the same dialects", () => {
    expect([...SUPPORTED_PROVIDERS].sort()).toEqual(Object.keys(BUILTIN_PROVIDER_CATALOGUE.usage).sort());
    for (const name of SUPPORTED_PROVIDERS) expect(isRawProvider(name)).toBe(true);
  });
});
