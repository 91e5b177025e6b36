// The integration guide shows the TypeScript example that typescript-client-pack.e2e.test.ts runs,
// byte for byte: a guide that drifts from the tested file fails here.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "./support";

describe("docs show the tested TypeScript example", () => {
  it("some docs/*.md has deploy/examples/typescript-client/turn-loop.mjs verbatim in a js block", () => {
    const example = readFileSync(join(repoRoot, "deploy/examples/typescript-client/turn-loop.mjs"), "utf8");
    const docs = readdirSync(join(repoRoot, "docs")).filter((name) => name.endsWith(".md"));
    const showing = docs.filter((name) =>
      readFileSync(join(repoRoot, "docs", name), "utf8").includes(`\`\`\`js\n${example}\`\`\``),
    );
    expect(showing).not.toEqual([]);
  });
});
