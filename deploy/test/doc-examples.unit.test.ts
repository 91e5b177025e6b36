// A guide's worked example is the tested file: every fenced block right under an
// `<!-- example: path/to/file -->` marker in docs/*.md must equal that file byte for byte.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "./support";

const MARKED_BLOCK = /<!-- example: (\S+) -->\n```[\w-]*\n([\s\S]*?)^```$/gm;

function markedExamples(): { doc: string; file: string; block: string }[] {
  const docs = readdirSync(join(repoRoot, "docs")).filter((name) => name.endsWith(".md"));
  return docs.flatMap((doc) =>
    [...readFileSync(join(repoRoot, "docs", doc), "utf8").matchAll(MARKED_BLOCK)].map((match) => ({
      doc: `docs/${doc}`,
      file: match[1] ?? "",
      block: match[2] ?? "",
    })),
  );
}

describe("the guides' worked examples", () => {
  const examples = markedExamples();

  it("include the Python client's turn loop", () => {
    expect(examples.map((example) => example.file)).toContain("deploy/examples/python-client/turn_loop.py");
  });

  it.each(examples.map((example) => [`${example.doc} ← ${example.file}`, example] as const))(
    "%s is the file, byte for byte",
    (_name, example) => {
      const path = join(repoRoot, example.file);
      expect(existsSync(path), `${example.file} does not exist`).toBe(true);
      expect(example.block).toBe(readFileSync(path, "utf8"));
    },
  );
});
