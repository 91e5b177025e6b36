// Lays out one compiled service (or prefixctl) the way its image's /app holds it, and checks it:
//   <out>/package.json, <out>/node_modules (production dependencies only), <out>/dist (make build)
// The Dockerfile runs this in its build stage and the e2e test runs it on the host, so what the test
// starts with plain `node` is what an image ships.
//   node --import tsx deploy/build/package-service.ts <service|prefixctl> <out-dir>
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { buildTargets, type ExternalVersions, externalsManifest } from "./build";

const repoRoot = resolve(import.meta.dirname, "../..");

/** Workspace packages the bundle inlines; only the proto package stays, for its .proto files (reflection). */
const packagesKeptAtRunTime = new Set(["proto"]);

/** Tools that must never reach a runtime image (no TypeScript loader or compiler at run time). */
export const buildOnlyPackages = ["tsx", "esbuild", "typescript", "vitest", "vite", "@biomejs/biome"];

/** A build target by its package's last path segment: "session-events", "prefixctl". */
function targetNamed(name: string) {
  const target = buildTargets.find((t) => t.packageDir.split("/").at(-1) === name);
  if (!target) throw new Error(`unknown package ${name}: one of ${buildTargets.map((t) => t.packageDir).join(", ")}`);
  return target;
}

export function packageService(name: string, out: string): void {
  const target = targetNamed(name);
  const dist = join(repoRoot, target.packageDir, "dist");
  const firstEntry = Object.keys(target.entries)[0] ?? "main";
  if (!existsSync(join(dist, `${firstEntry}.js`)))
    throw new Error(`${dist}/${firstEntry}.js is missing: run \`make build\` first`);
  const packageName = (
    JSON.parse(readFileSync(join(repoRoot, target.packageDir, "package.json"), "utf8")) as {
      name: string;
    }
  ).name;
  const staging = `${out}.deploy`;
  rmSync(out, { recursive: true, force: true });
  rmSync(staging, { recursive: true, force: true });
  // --prod: dependencies only. Injected workspace packages: what the lockfile pins, no symlinks out of
  // the tree. Hoisted: a flat node_modules, so dist/main.js resolves every external from /app/node_modules.
  execFileSync(
    "pnpm",
    [
      "--filter",
      packageName,
      "deploy",
      "--prod",
      "--offline",
      "--config.inject-workspace-packages=true",
      "--config.node-linker=hoisted",
      staging,
    ],
    { cwd: repoRoot, stdio: ["ignore", "ignore", "inherit"] },
  );
  cpSync(join(staging, "package.json"), join(out, "package.json"));
  renameSync(join(staging, "node_modules"), join(out, "node_modules"));
  rmSync(staging, { recursive: true, force: true });
  cpSync(dist, join(out, "dist"), { recursive: true, filter: (path) => !path.endsWith("meta.json") });
  // A CLI's bin shim (prefixctl's), which runs dist/ when there are no sources beside it.
  const bin = join(repoRoot, target.packageDir, "bin");
  if (existsSync(bin)) cpSync(bin, join(out, "bin"), { recursive: true });
  const workspaceScope = join(out, "node_modules/@prefix-guard");
  for (const name of readdirSync(workspaceScope)) {
    if (!packagesKeptAtRunTime.has(name)) rmSync(join(workspaceScope, name), { recursive: true, force: true });
  }
  checkLayout(out);
}

/** Throws when a build-only tool is installed or a runtime external is not the version the build bound. */
export function checkLayout(out: string): void {
  const modules = join(out, "node_modules");
  const present = buildOnlyPackages.filter((name) => existsSync(join(modules, name)));
  if (present.length > 0) throw new Error(`${out}: build-only packages in node_modules: ${present.join(", ")}`);
  const expected = JSON.parse(readFileSync(join(out, "dist", externalsManifest), "utf8")) as ExternalVersions;
  for (const [name, version] of Object.entries(expected)) {
    const manifest = join(modules, name, "package.json");
    const found = existsSync(manifest)
      ? (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version
      : "missing";
    if (found !== version) throw new Error(`${out}: ${name} is ${found}, the build bound ${version}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [name, out] = process.argv.slice(2);
  if (!name || !out) {
    process.stderr.write("usage: package-service.ts <service|prefixctl> <out-dir>\n");
    process.exit(2);
  }
  packageService(name, resolve(out));
  process.stdout.write(`packaged ${name} into ${out}\n`);
}
