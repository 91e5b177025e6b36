#!/usr/bin/env node
// Entry shim: runs the TypeScript CLI through tsx, so `prefixctl` works without a build step.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const tsx = require.resolve("tsx");
const result = spawnSync(process.execPath, ["--import", tsx, join(here, "../src/main.ts"), ...process.argv.slice(2)], {
  stdio: "inherit",
});
process.exit(result.status ?? 1);
