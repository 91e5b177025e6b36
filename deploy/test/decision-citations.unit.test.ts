// Every decision the code cites must be readable from the repository: a citation names a record,
// `docs/decisions/<name>.md`, never a ticket ("issue 19") that no reader of the repo can open. This
// test fails on an issue-number citation anywhere in the code and docs (CHANGELOG.md keeps its
// history), on a citation of a record that does not exist, and on a record that the index
// (docs/decisions/README.md) does not list or that lacks its sections. docs/decisions/README.md says
// how to write one; seed citations are checked by spec-references.unit.test.ts.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const repoRoot = resolve(import.meta.dirname, "../..");
const DECISIONS_DIR = "docs/decisions";
const INDEX = `${DECISIONS_DIR}/README.md`;
const SKIPPED_DIRS = new Set([
  "node_modules",
  ".git",
  "gen",
  "dist",
  "target",
  ".run",
  ".data",
  ".cache",
  ".venv",
  "__pycache__",
]);
/** History, not a reader's reference: the changelog names the issues each release closed. */
const SKIPPED_FILES = new Set(["CHANGELOG.md", "pnpm-lock.yaml", relative(repoRoot, import.meta.filename)]);
const SCANNED = /\.(ts|mts|mjs|cjs|js|py|sh|md|ya?ml|json|proto|java|sql|toml)$|^(Makefile|Dockerfile)$/;

/** "issue 19", "Issue 27 §6a", "issues 7", "issue #30". */
export const ISSUE_CITATION = /\bissues?\s*#?\d+/gi;
/** "docs/decisions/usage-identity.md", also inside a relative link ("../docs/decisions/x.md"). */
export const DECISION_CITATION = /docs\/decisions\/([A-Za-z0-9._-]+?)\.md/g;
/** A link of the index's table: "[usage-identity](usage-identity.md)". */
const INDEX_LINK = /\]\(([A-Za-z0-9._-]+)\.md\)/g;
/** Links between records and to the rest of the repository: "(session-defaults.md)", "(../spec.md)". */
const RELATIVE_LINK = /\]\((\.{0,2}\/?[A-Za-z0-9._/-]+\.md)(?:#[^)]*)?\)/g;
const REQUIRED_SECTIONS = ["## Context", "## Decision", "## Consequences"];

function scannedFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) scannedFiles(path, out);
    } else if (SCANNED.test(entry.name) && !SKIPPED_FILES.has(relative(repoRoot, path))) {
      out.push(path);
    }
  }
  return out;
}

interface Found {
  readonly at: string;
  readonly text: string;
}

function matchesIn(files: readonly string[], pattern: RegExp, group: number): Found[] {
  return files.flatMap((file) => {
    const text = readFileSync(file, "utf8");
    return [...text.matchAll(pattern)].map((match) => ({
      at: `${relative(repoRoot, file)}:${text.slice(0, match.index).split("\n").length}`,
      text: match[group] ?? "",
    }));
  });
}

const records = () =>
  readdirSync(join(repoRoot, DECISIONS_DIR))
    .filter((name) => name.endsWith(".md") && name !== "README.md")
    .map((name) => name.slice(0, -".md".length))
    .sort();

describe("decision citations resolve in docs/decisions", () => {
  it("finds issue numbers and record paths, and nothing else", () => {
    const issues = "Issue 27 §6a; see issues 7 and 13; issue #30; tissue 5; issue them; openai/codex#2611";
    expect([...issues.matchAll(ISSUE_CITATION)].map((m) => m[0])).toEqual(["Issue 27", "issues 7", "issue #30"]);
    const decisions =
      "(docs/decisions/usage-identity.md): ... [x](../docs/decisions/crypto-shredding.md#why) docs/spec.md";
    expect([...decisions.matchAll(DECISION_CITATION)].map((m) => m[1])).toEqual(["usage-identity", "crypto-shredding"]);
  });

  const files = scannedFiles(repoRoot);

  it("has no issue-number citation left in code, tests or docs", () => {
    expect(files.length).toBeGreaterThan(300);
    const left = matchesIn(files, ISSUE_CITATION, 0).map((found) => `${found.at}: "${found.text}"`);
    expect(left).toEqual([]);
  });

  it("has a record for every decision the code and docs cite (or cites the index)", () => {
    const cited = matchesIn(files, DECISION_CITATION, 1);
    expect(cited.length).toBeGreaterThan(20);
    const known = new Set([...records(), "README"]);
    const missing = cited.filter((found) => !known.has(found.text)).map((f) => `${f.at}: ${f.text}`);
    expect(missing).toEqual([]);
  });

  it("lists every record in the index, and only records that exist", () => {
    const index = readFileSync(join(repoRoot, INDEX), "utf8");
    const listed = [...index.matchAll(INDEX_LINK)].map((m) => m[1] ?? "").sort();
    expect(listed).toEqual(records());
  });

  it("gives every record a title and its sections, and links that resolve", () => {
    const problems = records().flatMap((name) => {
      const path = join(repoRoot, DECISIONS_DIR, `${name}.md`);
      const text = readFileSync(path, "utf8");
      const lines = text.split("\n");
      return [
        ...(lines[0]?.startsWith("# ") === true ? [] : [`${name}.md: first line is not a "# " title`]),
        ...REQUIRED_SECTIONS.filter((section) => !lines.includes(section)).map((s) => `${name}.md: no "${s}"`),
        ...[...text.matchAll(RELATIVE_LINK)]
          .map((m) => m[1] ?? "")
          .filter((target) => !existsSync(resolve(repoRoot, DECISIONS_DIR, target)))
          .map((target) => `${name}.md: link to ${target} does not resolve`),
      ];
    });
    expect(problems).toEqual([]);
  });
});
