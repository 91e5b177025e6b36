// README.md, docs/integration.md and docs/usage-intake.md take their provider tables from the
// provider catalogue: a doc whose table disagrees with libs/providers/catalogue.json fails here.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { BUILTIN_PROVIDER_CATALOGUE, mergeProviderCatalogue, replaceDocTables } from "@prefix-guard/providers";
import { describe, expect, it } from "vitest";

const repoRoot = resolve(import.meta.dirname, "../..");
const EXPECTED = {
  "README.md": ["families"],
  "docs/integration.md": ["requests"],
  "docs/usage-intake.md": ["usage"],
} as const;

describe("the docs' provider tables are the catalogue's", () => {
  it.each(Object.entries(EXPECTED))("%s holds its tables exactly as rendered (make docs-providers)", (doc, tables) => {
    const text = readFileSync(resolve(repoRoot, doc), "utf8");
    const rendered = replaceDocTables(text, BUILTIN_PROVIDER_CATALOGUE);
    expect(rendered.found).toEqual(tables);
    expect(text, `${doc} disagrees with libs/providers/catalogue.json: run make docs-providers`).toBe(rendered.text);
  });

  it("notices a catalogue change the docs do not carry", () => {
    const text = readFileSync(resolve(repoRoot, "README.md"), "utf8");
    const family = BUILTIN_PROVIDER_CATALOGUE.families.find((f) => f.family === "gpt-5.6-terra");
    if (family === undefined) throw new Error("gpt-5.6-terra is catalogued");
    const changed = mergeProviderCatalogue(
      BUILTIN_PROVIDER_CATALOGUE,
      { families: [{ ...family, minimumCacheableTokens: 2048 }] },
      "test",
    );
    expect(replaceDocTables(text, changed).text).not.toBe(text);
  });
});
