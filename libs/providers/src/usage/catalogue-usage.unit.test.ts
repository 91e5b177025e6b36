// Every usage entry of the provider catalogue: its documented example parses, and the parser's counts
// are what the catalogue's field names say they are. A catalogue field name the parser does not read
// (or a parser that reads another) fails here.

import { describe, expect, it } from "vitest";
import { BUILTIN_PROVIDER_CATALOGUE } from "../index";
import { isRawProvider, parseProviderUsage } from "./index";

/** "usage.a + usage.b" evaluated on the example: the sum of the counts at those paths (absent = 0). */
function countOf(example: unknown, expression: string | null): number {
  if (expression === null) return 0;
  return expression
    .split("+")
    .map((path) => path.trim())
    .reduce((sum, path) => {
      let value: unknown = example;
      for (const key of path.split(".")) value = (value as Record<string, unknown> | undefined)?.[key];
      return sum + (typeof value === "number" ? value : 0);
    }, 0);
}

describe("the provider catalogue's usage entries, parsed from their documented examples", () => {
  it.each(Object.entries(BUILTIN_PROVIDER_CATALOGUE.usage))("%s", (id, usage) => {
    expect(isRawProvider(id)).toBe(true);
    const parsed = parseProviderUsage(id, JSON.stringify(usage.example));
    expect(parsed.promptTokens).toBe(countOf(usage.example, usage.promptTokens));
    expect(parsed.cachedTokens).toBe(countOf(usage.example, usage.cachedTokens));
    expect(parsed.cacheCreationTokens).toBe(countOf(usage.example, usage.cacheWriteTokens));
    expect(parsed.completionTokens).toBe(countOf(usage.example, usage.outputTokens));
    expect(parsed.promptTokens).toBeGreaterThan(0);
  });
});
