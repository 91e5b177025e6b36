#!/usr/bin/env node
// Entry shim. An installed prefixctl runs its compiled JavaScript (`make build` writes
// dist/prefixctl.js, and the images ship it), with no TypeScript loader at run time. A development
// checkout (its src/ beside this file, tsx installed) always runs the sources through tsx: so an old
// build never answers for new code, and because a build in the workspace cannot load its runtime
// externals (@grpc/reflection, grpc-health-check: another package's dependencies under pnpm's strict
// layout), which only the packaged, flat node_modules of an install provides.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const built = join(here, "../dist/prefixctl.js");
const sources = join(here, "../src/main.ts");

function resolveTsx() {
  try {
    return createRequire(import.meta.url).resolve("tsx");
  } catch {
    return undefined;
  }
}

const tsx = existsSync(sources) ? resolveTsx() : undefined;
if (tsx === undefined) {
  if (!existsSync(built)) {
    process.stderr.write(
      `prefixctl: ${built} is missing and tsx (a development dependency) is not installed: run \`make build\` first\n`,
    );
    process.exit(2);
  }
  await import(pathToFileURL(built).href);
} else {
  const child = spawn(process.execPath, ["--import", tsx, sources, ...process.argv.slice(2)], {
    stdio: "inherit",
  });
  // `events tail` runs until stopped: a SIGTERM or SIGHUP sent to this process must reach it. Ctrl-C
  // is not passed on: the terminal sends SIGINT to the child itself (the whole process group).
  process.on("SIGINT", () => undefined);
  for (const signal of ["SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code) => process.exit(code ?? 1));
}
