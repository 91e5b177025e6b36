// Every seed section the code cites ("seed 001 §4.2", "Seed 000 §5.3, §7") must be a heading of
// docs/spec.md, the English digest of the seeds, so a reader can resolve the citation inside the repo.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const repoRoot = resolve(import.meta.dirname, "../..");
const SOURCE_ROOTS = ["services", "libs", "deploy", "bench"];
const SKIPPED_DIRS = new Set(["node_modules", "gen", "results", ".cache", ".run", ".data"]);

// "seed 00N" then one or more "§x.y", separated by commas, "、", "/" or "and"; a citation may wrap onto
// the next comment line ("seed 000\n * §5.5").
const GAP = String.raw`(?:[\s,:]|\*|\/\/)*`;
const CITATION = new RegExp(
  String.raw`\bseeds?[\s-]*(00\d)${GAP}((?:§\s*\d+(?:\.\d+)*(?:${GAP}(?:,|、|\/|and)?${GAP}(?=§))?)+)`,
  "gi",
);
const SECTION = /§\s*(\d+(?:\.\d+)*)/g;
// Headings of docs/spec.md that name a section: "### 001 §4.2 Read/write path".
const HEADING = /^#{2,6}\s+(00\d)\s+§(\d+(?:\.\d+)*)\s/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) return SKIPPED_DIRS.has(entry.name) ? [] : sourceFiles(join(dir, entry.name));
    return /\.(ts|mts|mjs)$/.test(entry.name) ? [join(dir, entry.name)] : [];
  });
}

/** "001 §4.2" → the places that cite it. */
function citedSections(files: readonly string[]): Map<string, string[]> {
  const cited = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    for (const citation of text.matchAll(CITATION)) {
      const line = text.slice(0, citation.index).split("\n").length;
      for (const section of (citation[2] ?? "").matchAll(SECTION)) {
        const key = `${citation[1]} §${section[1]}`;
        cited.set(key, [...(cited.get(key) ?? []), `${relative(repoRoot, file)}:${line}`]);
      }
    }
  }
  return cited;
}

function specHeadings(markdown: string): Set<string> {
  const headings = new Set<string>();
  for (const line of markdown.split("\n")) {
    const match = HEADING.exec(line);
    if (match !== null) headings.add(`${match[1]} §${match[2]}`);
  }
  return headings;
}

describe("seed citations resolve in docs/spec.md", () => {
  it("parses citations, lists of sections and headings", () => {
    expect(
      [
        ..."// seed 001 §4.2 评审补充; Seed 000 §5.3, §7; seeds 002 §2.2 / §5.2 and §4.4; seed 000\n * §5.5".matchAll(
          CITATION,
        ),
      ].map((m) => [m[1], [...(m[2] ?? "").matchAll(SECTION)].map((s) => s[1])]),
    ).toEqual([
      ["001", ["4.2"]],
      ["000", ["5.3", "7"]],
      ["002", ["2.2", "5.2", "4.4"]],
      ["000", ["5.5"]],
    ]);
    expect(specHeadings("## Seed 001: x\n### 001 §4 Design\n#### 001 §4.2 Read path\n§4.3 in prose")).toEqual(
      new Set(["001 §4", "001 §4.2"]),
    );
  });

  it("has a docs/spec.md heading for every section the code cites", () => {
    const files = SOURCE_ROOTS.flatMap((root) => sourceFiles(join(repoRoot, root)));
    const cited = citedSections(files);
    expect(cited.size).toBeGreaterThan(10);
    const headings = specHeadings(readFileSync(join(repoRoot, "docs/spec.md"), "utf8"));
    const missing = [...cited]
      .filter(([section]) => !headings.has(section))
      .map(([section, at]) => `${section} (${at.join(", ")})`);
    expect(missing).toEqual([]);
  });
});
