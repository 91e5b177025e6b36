// `prefixctl providers`: the provider catalogue this deployment runs with (the built-in one, with
// PROVIDER_CATALOGUE_FILE merged over it, as the services read it). Local work, no service is called;
// an operator checks a catalogue file with it before rolling it out.

import type { ProviderCatalogue } from "@prefix-guard/providers";
import { loadProviderCatalogue } from "@prefix-guard/providers/load";
import { type Column, FIT, type Layout, renderTable, WIDE } from "./format/table";

export type ProvidersCommand = { readonly kind: "providers"; readonly json: boolean; readonly wide: boolean };

export function parseProvidersCommand(argv: readonly string[]): ProvidersCommand | { readonly error: string } {
  const rest = argv.slice(1);
  const unknown = rest.find((arg) => arg !== "--json" && arg !== "--wide");
  if (unknown !== undefined) return { error: `providers takes only --json and --wide, got '${unknown.slice(0, 100)}'` };
  return { kind: "providers", json: rest.includes("--json"), wide: rest.includes("--wide") };
}

const COLUMNS: readonly Column[] = [
  { header: "PROVIDER", fit: 12 },
  { header: "FAMILY", fit: 18 },
  { header: "CACHE API", fit: 22 },
  { header: "RETENTIONS", fit: 14 },
  { header: "DEFAULT" },
  { header: "MIN TOKENS", align: "right" },
  { header: "USD/M IN/OUT", align: "right" },
  { header: "READ", align: "right" },
  { header: "WRITE" },
  { header: "CHECKED", fit: "hidden" },
  { header: "DOCS", fit: "hidden" },
];

export function formatProviders(catalogue: ProviderCatalogue, layout: Layout): string {
  const rows = catalogue.families.map((family) => [
    family.provider,
    family.family,
    family.cacheApi,
    family.retentions.length === 0 ? "-" : family.retentions.join(","),
    family.defaultRetention,
    String(family.minimumCacheableTokens),
    `${family.prices.inputPerMillion}/${family.prices.outputPerMillion}`,
    `${family.prices.readMultiplier}x`,
    Object.entries(family.prices.writeMultipliers)
      .map(([retention, multiplier]) => `${retention} ${multiplier}x`)
      .join(", "),
    family.checked,
    family.docs,
  ]);
  return `${renderTable(COLUMNS, rows, layout).join("\n")}\n`;
}

/** @throws ValidationError when PROVIDER_CATALOGUE_FILE is unreadable or wrong (naming the entry and field). */
export function providersOutput(command: ProvidersCommand, env: Readonly<Record<string, string | undefined>>): string {
  const catalogue = loadProviderCatalogue(env.PROVIDER_CATALOGUE_FILE);
  return command.json
    ? `${JSON.stringify(catalogue, null, 2)}\n`
    : formatProviders(catalogue, command.wide ? WIDE : FIT);
}
