import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import {
  BUILTIN_PROVIDER_CATALOGUE,
  expiredAfter,
  familyOf,
  mergeProviderCatalogue,
  parseProviderCatalogue,
  providerOfWireFormat,
  retentionInForce,
} from "./index";
import { loadProviderCatalogue } from "./load";

const catalogue = BUILTIN_PROVIDER_CATALOGUE;
const family = (model: string, provider?: string) => familyOf(catalogue, model, provider);

function errorOf(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("expected a ValidationError");
}

describe("the built-in provider catalogue", () => {
  it("names the page and the day each entry was checked against", () => {
    for (const entry of [...Object.values(catalogue.providers), ...catalogue.families]) {
      expect(entry.docs).toMatch(/^https:\/\//);
      expect(entry.checked).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
  });

  it("finds a model's family by its longest prefix at a name boundary, per provider", () => {
    expect(family("gpt-5.6-terra-2026-06-27", "openai")?.family).toBe("gpt-5.6-terra");
    expect(family("gpt-5.6", "openai")?.cacheApi).toBe("prompt_cache_options");
    expect(family("gpt-5.6", "azure_openai")?.retentions).toEqual(["30m", "12h"]);
    expect(family("gpt-5.5", "openai")?.retentions).toEqual(["24h"]);
    expect(family("gpt-5.1", "openai")?.family).toBe("gpt-5");
    expect(family("gpt-50", "openai")).toBeNull();
    expect(family("claude-3.5-haiku")?.family).toBe("claude-3-5-haiku");
    // Bedrock serves Anthropic's models under its own ids.
    expect(family("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock")?.family).toBe("claude-sonnet-4");
    expect(family("claude-sonnet-4-5", "openai")).toBeNull();
  });

  it("knows which provider a wire format speaks to", () => {
    expect(providerOfWireFormat(catalogue, "openai_chat")).toBe("openai");
    expect(providerOfWireFormat(catalogue, "anthropic_messages")).toBe("anthropic");
    expect(providerOfWireFormat(catalogue, "bedrock_converse")).toBe("bedrock");
    expect(providerOfWireFormat(catalogue, "toy")).toBeNull();
  });

  it("judges expiry against what the build opted into, else the family's default", () => {
    const gpt56 = family("gpt-5.6", "openai");
    expect(retentionInForce(gpt56, "")).toBe("30m");
    expect(expiredAfter(20 * 60_000, retentionInForce(gpt56, ""))).toBe(false);
    expect(expiredAfter(31 * 60_000, retentionInForce(gpt56, ""))).toBe(true);
    expect(retentionInForce(family("claude-sonnet-4-5"), "")).toBe("5m");
    expect(retentionInForce(family("claude-sonnet-4-5"), "1h")).toBe("1h");
    expect(retentionInForce(family("gpt-5.4"), "in_memory")).toBe("5m");
    expect(retentionInForce(null, "")).toBe("5m");
  });
});

describe("a catalogue that is wrong fails naming the entry and field", () => {
  const base = JSON.parse(JSON.stringify({ ...catalogue })) as {
    families: Record<string, unknown>[];
    providers: Record<string, unknown>;
    usage: Record<string, unknown>;
  };
  const withFamily = (index: number, patch: Record<string, unknown>) => ({
    ...base,
    families: base.families.map((entry, i) => (i === index ? { ...entry, ...patch } : entry)),
  });
  const gpt56 = base.families.findIndex((f) => f.family === "gpt-5.6");

  it.each([
    [{ retentions: ["2h"] }, "families[INDEX] (openai/gpt-5.6).retentions[0]"],
    [{ minimumCacheableTokens: -1 }, "families[INDEX] (openai/gpt-5.6).minimumCacheableTokens"],
    [{ checked: "yesterday" }, "families[INDEX] (openai/gpt-5.6).checked"],
    [{ provider: "nobody" }, "families[INDEX] (nobody/gpt-5.6).provider"],
    [{ retentions: ["24h"] }, "families[INDEX] (openai/gpt-5.6).prices.writeMultipliers"],
    [{ family: "GPT 5.6" }, "families[INDEX] (openai/GPT 5.6).family"],
    [{ surprise: true }, "families[INDEX] (openai/gpt-5.6)"],
  ])("%j → %s", (patch, where) => {
    const error = errorOf(() => parseProviderCatalogue(withFamily(gpt56, patch), "test.json"));
    expect(error.field).toContain(`test.json: ${where.replace("INDEX", String(gpt56))}`);
  });

  it("refuses a family listed twice", () => {
    const twice = { ...base, families: [...base.families, base.families[gpt56]] };
    expect(errorOf(() => parseProviderCatalogue(twice, "test.json")).message).toContain("is listed twice");
  });
});

describe("an operator's file over the built-in catalogue", () => {
  const dir = mkdtempSync(join(tmpdir(), "pg-catalogue-"));
  const write = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it("replaces a family it names and adds one it does not", () => {
    const gpt56 = family("gpt-5.6", "openai");
    const merged = mergeProviderCatalogue(
      catalogue,
      {
        families: [
          { ...gpt56, minimumCacheableTokens: 2048 },
          { ...gpt56, family: "gpt-5.7" },
        ],
      },
      "override.json",
    );
    expect(familyOf(merged, "gpt-5.6", "openai")?.minimumCacheableTokens).toBe(2048);
    expect(familyOf(merged, "gpt-5.7-sol", "openai")?.cacheApi).toBe("prompt_cache_options");
    expect(merged.families.length).toBe(catalogue.families.length + 1);
  });

  it("is read at start; an unreadable, non-JSON or wrong file fails naming it, the built-in stays untouched", () => {
    expect(loadProviderCatalogue(undefined)).toBe(catalogue);
    expect(errorOf(() => loadProviderCatalogue(join(dir, "missing.json"))).field).toBe("PROVIDER_CATALOGUE_FILE");
    const notJson = write("bad.json", "{");
    expect(errorOf(() => loadProviderCatalogue(notJson)).field).toBe(`PROVIDER_CATALOGUE_FILE ${notJson}`);
    const wrong = write("wrong.json", JSON.stringify({ families: [{ provider: "openai", family: "x" }] }));
    expect(errorOf(() => loadProviderCatalogue(wrong)).field).toMatch(/families\[0\] \(openai\/x\)/);
    const good = write("good.json", JSON.stringify({ families: [{ ...family("gpt-5.6"), family: "gpt-6" }] }));
    expect(familyOf(loadProviderCatalogue(good), "gpt-6", "openai")?.defaultRetention).toBe("30m");
    expect(familyOf(catalogue, "gpt-6", "openai")).toBeNull();
  });
});
