// The provider tables of README.md, docs/integration.md and docs/usage-intake.md, rendered from the
// catalogue, so the docs cannot drift from what the services read. Each table sits between
// `<!-- provider-catalogue:NAME -->` and `<!-- /provider-catalogue:NAME -->`;
// `make docs-providers` rewrites them and deploy/test/provider-doc-tables.unit.test.ts fails when a
// doc disagrees with the catalogue. `prefixctl providers` prints the same tables.

import type { ModelFamily, ProviderCatalogue } from "./catalogue";

export const DOC_TABLES = ["families", "requests", "usage"] as const;
export type DocTableName = (typeof DOC_TABLES)[number];

const code = (text: string) => `\`${text}\``;
const list = (values: readonly string[]) => (values.length === 0 ? "–" : values.map(code).join(", "));
const cell = (text: string) => text.replaceAll("|", "\\|");

function writeMultipliers(family: ModelFamily): string {
  return Object.entries(family.prices.writeMultipliers)
    .map(([retention, multiplier]) => `${retention} ${multiplier}×`)
    .join(", ");
}

function familiesTable(catalogue: ProviderCatalogue): string[] {
  return [
    "| provider | family | default retention | minimum cacheable tokens | input / output USD per M | read | write | checked |",
    "|---|---|---|---|---|---|---|---|",
    ...catalogue.families.map(
      (family) =>
        `| ${family.provider} | ${code(family.family)} | ${family.defaultRetention} | ${family.minimumCacheableTokens} | ` +
        `${family.prices.inputPerMillion} / ${family.prices.outputPerMillion} | ${family.prices.readMultiplier}× | ` +
        `${writeMultipliers(family)} | [${family.checked}](${family.docs}) |`,
    ),
  ];
}

function requestsTable(catalogue: ProviderCatalogue): string[] {
  const providerRows = Object.entries(catalogue.providers).map(([id, provider]) => {
    const breakpoints =
      provider.breakpoints === null
        ? "–"
        : `${code(provider.breakpoints.field)}, ≤ ${provider.breakpoints.maxPerRequest} per request, lookback ${provider.breakpoints.lookbackBlocks}`;
    const exclusive = provider.exclusiveFields.map((group) => group.map(code).join(" ⊕ ")).join("; ") || "–";
    return (
      `| ${id} | ${list(provider.wireFormats)} | ${breakpoints} | ${provider.automaticCaching === null ? "–" : code(provider.automaticCaching)} | ` +
      `${provider.diagnosticsField === null ? "–" : code(provider.diagnosticsField)} | ${exclusive} | ${provider.ttlOrder} |`
    );
  });
  const familyRows = catalogue.families
    .filter((family) => family.cacheApi !== "none")
    .map(
      (family) =>
        `| ${family.provider} | ${code(family.family)} | ${code(family.cacheApi)} | ${list(family.retentions)} | ${family.diagnostics ? "yes" : "no"} |`,
    );
  return [
    "| provider | wire formats | breakpoints | automatic caching | diagnostics field | never together | TTL order |",
    "|---|---|---|---|---|---|---|",
    ...providerRows,
    "",
    "| provider | family | cache API | `cache.retention` it takes | diagnostics |",
    "|---|---|---|---|---|",
    ...familyRows,
  ];
}

function usageTable(catalogue: ProviderCatalogue): string[] {
  return [
    "| `provider` | prompt (whole prompt) | cached (read) | written | output | documented at |",
    "|---|---|---|---|---|---|",
    ...Object.entries(catalogue.usage).map(
      ([id, usage]) =>
        `| ${code(id)} | ${cell(code(usage.promptTokens))} | ${code(usage.cachedTokens)} | ` +
        `${usage.cacheWriteTokens === null ? "–" : code(usage.cacheWriteTokens)} | ${code(usage.outputTokens)} | [${usage.provider}](${usage.docs}) |`,
    ),
  ];
}

export function renderDocTable(catalogue: ProviderCatalogue, name: DocTableName): string {
  const lines =
    name === "families"
      ? familiesTable(catalogue)
      : name === "requests"
        ? requestsTable(catalogue)
        : usageTable(catalogue);
  return `${lines.join("\n")}\n`;
}

const begin = (name: string) => `<!-- provider-catalogue:${name} -->`;
const end = (name: string) => `<!-- /provider-catalogue:${name} -->`;

/**
 * `text` with every marked table replaced by its rendering; `found` lists the tables it holds.
 * An unterminated marker is an error, not a silently truncated document.
 */
export function replaceDocTables(
  text: string,
  catalogue: ProviderCatalogue,
): { readonly text: string; readonly found: DocTableName[] } {
  const found: DocTableName[] = [];
  let out = text;
  for (const name of DOC_TABLES) {
    const start = out.indexOf(begin(name));
    if (start < 0) continue;
    const stop = out.indexOf(end(name), start);
    if (stop < 0) throw new Error(`${begin(name)} has no ${end(name)}`);
    found.push(name);
    out = `${out.slice(0, start)}${begin(name)}\n${renderDocTable(catalogue, name)}${out.slice(stop)}`;
  }
  return { text: out, found };
}
