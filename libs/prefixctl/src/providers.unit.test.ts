import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUILTIN_PROVIDER_CATALOGUE } from "@prefix-guard/providers";
import { describe, expect, it } from "vitest";
import { run } from "./run";

function capture() {
  let stdout = "";
  let stderr = "";
  return {
    io: {
      stdout: {
        write: (text: string) => {
          stdout += text;
          return true;
        },
      },
      stderr: {
        write: (text: string) => {
          stderr += text;
          return true;
        },
      },
    },
    out: () => stdout,
    err: () => stderr,
  };
}

describe("prefixctl providers", () => {
  it("prints every family of the built-in catalogue, with gpt-5.6's 30-minute default and 1.25x writes", async () => {
    const cli = capture();
    expect(await run(["providers", "--wide"], cli.io, { env: {} })).toBe(0);
    const lines = cli.out().trim().split("\n");
    expect(lines).toHaveLength(BUILTIN_PROVIDER_CATALOGUE.families.length + 1);
    expect(lines.find((line) => line.includes("gpt-5.6-terra"))).toMatch(
      /prompt_cache_options\s+30m\s+30m.*30m 1\.25x/,
    );
  });

  it("prints the merged catalogue as JSON, with an operator's file over the built-in one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pg-prefixctl-providers-"));
    const file = join(dir, "catalogue.json");
    const gpt56 = BUILTIN_PROVIDER_CATALOGUE.families.find((f) => f.family === "gpt-5.6");
    writeFileSync(file, JSON.stringify({ families: [{ ...gpt56, family: "gpt-5.7" }] }));
    const cli = capture();
    expect(await run(["providers", "--json"], cli.io, { env: { PROVIDER_CATALOGUE_FILE: file } })).toBe(0);
    const printed = JSON.parse(cli.out()) as { families: { family: string }[] };
    expect(printed.families.map((f) => f.family)).toContain("gpt-5.7");
  });

  it("fails naming the file, entry and field of a bad catalogue, and refuses unknown flags", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pg-prefixctl-providers-"));
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ families: [{ provider: "openai", family: "x" }] }));
    const cli = capture();
    expect(await run(["providers"], cli.io, { env: { PROVIDER_CATALOGUE_FILE: file } })).toBe(1);
    expect(cli.err()).toContain(`PROVIDER_CATALOGUE_FILE ${file}: families[0] (openai/x).cacheApi`);
    expect(cli.out()).toBe("");
    const flags = capture();
    expect(await run(["providers", "--session", "s"], flags.io, { env: {} })).toBe(2);
    expect(flags.err()).toContain("providers takes only --json and --wide");
  });
});
