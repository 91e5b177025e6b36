#!/usr/bin/env node
// Entry shim. An installed prefixctl runs its compiled JavaScript (`make build` writes
// dist/prefixctl.js, and the images ship it), with no TypeScript loader at run time. A development
// checkout runs the sources through tsx (a devDependency) when there is no build or a source file
// changed after it, so an old build never answers for new code.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const built = join(here, "../dist/prefixctl.js");
const sources = join(here, "../src");

/** The newest modification time under `dir` (ms), 0 when it does not exist. */
function newestUnder(dir) {
  if (!existsSync(dir)) return 0;
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs);
  }
  return newest;
}

if (existsSync(built) && statSync(built).mtimeMs >= newestUnder(sources)) {
  await import(pathToFileURL(built).href);
} else {
  let tsx;
  try {
    tsx = createRequire(import.meta.url).resolve("tsx");
  } catch {
    process.stderr.write(
      `prefixctl: ${built} is missing and tsx (a development dependency) is not installed: run \`make build\` first\n`,
    );
    process.exit(2);
  }
  const result = spawnSync(
    process.execPath,
    ["--import", tsx, join(here, "../src/main.ts"), ...process.argv.slice(2)],
    {
      stdio: "inherit",
    },
  );
  process.exit(result.status ?? 1);
}
