// `make docs-providers`: rewrites the provider tables in the docs from the built-in catalogue.
//   node --import tsx libs/providers/src/write-doc-tables.ts
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { replaceDocTables } from "./doc-tables";
import { BUILTIN_PROVIDER_CATALOGUE } from "./index";

export const DOCS_WITH_PROVIDER_TABLES = ["README.md", "docs/integration.md", "docs/usage-intake.md"] as const;

const repoRoot = resolve(import.meta.dirname, "../../..");
for (const doc of DOCS_WITH_PROVIDER_TABLES) {
  const path = resolve(repoRoot, doc);
  const before = readFileSync(path, "utf8");
  const { text, found } = replaceDocTables(before, BUILTIN_PROVIDER_CATALOGUE);
  if (text !== before) writeFileSync(path, text);
  process.stdout.write(
    `${doc}: ${found.length === 0 ? "no provider tables" : found.join(", ")}${text !== before ? " (rewritten)" : ""}\n`,
  );
}
