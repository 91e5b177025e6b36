// CONTRIBUTING.md's recipes name files and code; a rename must not leave them pointing at nothing.
// Every test a recipe says follows it must exist. The "Raw SQL or query builder" recipe is checked
// closely: each path it cites exists (a `<service>` placeholder matching at least one), and each
// name it cites in backticks is declared in a file it cites or in libs/db, the library it is about.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const repoRoot = resolve(import.meta.dirname, "../..");
const contributing = readFileSync(join(repoRoot, "CONTRIBUTING.md"), "utf8");
const SKIPPED_DIRS = new Set(["node_modules", ".git", "gen", "dist", "target", ".run", ".data", ".cache"]);

/** The text under `heading` (a "## " or "### " line) up to the next heading of the same or a higher level. */
function sectionOf(markdown: string, heading: string): string {
  const lines = markdown.split("\n");
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`CONTRIBUTING.md has no "${heading}"`);
  const level = heading.indexOf(" ");
  const end = lines.findIndex((line, index) => index > start && /^#+ /.test(line) && line.indexOf(" ") <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end).join("\n");
}

function backticked(text: string): string[] {
  return [...text.matchAll(/`([^`\n]+)`/g)].map((match) => match[1] as string);
}

const REPO_PATH = /^(libs|services|migrations|deploy|docs|bench|proto)\//;
/** A name as code cites it: `withSql`, `Sql.batch`, `forUpdate(dialect)`. */
const CODE_NAME = /^([A-Za-z_$][\w$]*)(?:\.([A-Za-z_$][\w$]*))?(?:\([\w, ]*\))?$/;

/** Repository paths matching `pattern`, where a `<placeholder>` segment matches any one entry. */
function expandPath(pattern: string, root = repoRoot): string[] {
  let matches = [""];
  for (const segment of pattern.replace(/\/$/, "").split("/")) {
    const next: string[] = [];
    for (const base of matches) {
      const dir = join(root, base);
      if (!segment.includes("<")) {
        if (existsSync(join(dir, segment))) next.push(base === "" ? segment : `${base}/${segment}`);
        continue;
      }
      if (!existsSync(dir) || !statSync(dir).isDirectory()) continue;
      const shape = new RegExp(`^${segment.replace(/<[^>]+>/g, "[^/]+").replace(/\./g, "\\.")}$`);
      for (const entry of readdirSync(dir)) {
        if (shape.test(entry) && !SKIPPED_DIRS.has(entry)) next.push(base === "" ? entry : `${base}/${entry}`);
      }
    }
    matches = next;
  }
  return matches;
}

function filesUnder(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIPPED_DIRS.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) filesUnder(path, out);
    else out.push(path);
  }
  return out;
}

/** Whether `source` declares `name`: an exported function, class, interface, type or constant, or a member. */
function declares(source: string, name: string): boolean {
  const exported = new RegExp(
    `export\\s+(?:declare\\s+)?(?:async\\s+)?(?:function\\*?|class|interface|type|const|let)\\s+${name}\\b`,
  );
  const member = new RegExp(`^\\s*(?:readonly\\s+)?(?:async\\s+)?${name}\\??\\s*[:(<]`, "m");
  return exported.test(source) || member.test(source);
}

describe("CONTRIBUTING.md recipes", () => {
  const recipes = sectionOf(contributing, "## Recipes");

  it("name only tests that exist", () => {
    const cited = [...new Set(backticked(recipes).filter((token) => /\.test\.ts$/.test(token)))];
    expect(cited.length).toBeGreaterThan(3);
    const tests = new Set(
      ["libs", "services", "deploy", "bench", "proto"].flatMap((dir) =>
        filesUnder(join(repoRoot, dir)).map((path) => relative(repoRoot, path)),
      ),
    );
    const names = new Set([...tests].map((path) => path.split("/").at(-1)));
    const missing = cited.filter((test) => (test.includes("/") ? !tests.has(test) : !names.has(test)));
    expect(missing).toEqual([]);
  });
});

describe('the "Raw SQL or query builder" recipe', () => {
  const recipe = sectionOf(contributing, "### Raw SQL or query builder");
  const tokens = [...new Set(backticked(recipe))];
  const paths = tokens.filter((token) => REPO_PATH.test(token));

  it("cites paths that exist", () => {
    expect(paths).toEqual(
      expect.arrayContaining([
        "libs/db/src/sql.ts",
        "migrations/<service>/index.ts",
        "libs/db/src/sql-recipe.int.test.ts",
      ]),
    );
    const missing = paths.filter((path) => expandPath(path).length === 0);
    expect(missing).toEqual([]);
  });

  it("cites names declared in the files it cites or in libs/db", () => {
    const sources = [
      ...paths.flatMap((path) => expandPath(path)).filter((path) => path.endsWith(".ts")),
      ...readdirSync(join(repoRoot, "libs/db/src"))
        .filter((file) => file.endsWith(".ts") && !file.includes(".test."))
        .map((file) => `libs/db/src/${file}`),
    ].map((path) => readFileSync(join(repoRoot, path), "utf8"));
    const names = tokens.flatMap((token) => {
      const match = CODE_NAME.exec(token);
      return match === null ? [] : [{ token, head: match[1] as string, member: match[2] }];
    });
    expect(names.map((name) => name.token)).toEqual(
      expect.arrayContaining(["inSqlTransaction", "Sql.batch", "forUpdate(dialect)", "lockForUpdate(query)"]),
    );
    const unresolved = names.filter(
      ({ head, member }) =>
        !sources.some((source) => declares(source, head) && (member === undefined || declares(source, member))),
    );
    expect(unresolved.map((name) => name.token)).toEqual([]);
  });

  it("would notice a name or a path that is gone", () => {
    expect(expandPath("services/<name>/src/adapters/mysql/")).toContain("services/cache-monitor/src/adapters/mysql");
    expect(expandPath("services/<name>/src/adapters/postgres/")).toEqual([]);
    const sql = readFileSync(join(repoRoot, "libs/db/src/sql.ts"), "utf8");
    expect(declares(sql, "lockForUpdate") && declares(sql, "batch")).toBe(true);
    expect(declares(sql, "lockRowsForUpdate")).toBe(false);
  });
});
