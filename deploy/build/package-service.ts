// Lays out one compiled service the way its image's /app holds it, and checks the layout:
//   <out>/package.json, <out>/node_modules (production dependencies only), <out>/dist (make build)
// The Dockerfile runs this in its build stage and the e2e test runs it on the host, so what the test
// starts with plain `node` is what an image ships.
//   node --import tsx deploy/build/package-service.ts <service> <out-dir>
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { type ExternalVersions, externalsManifest, serviceNames } from "./build";

const repoRoot = resolve(import.meta.dirname, "../..");

/** Workspace packages the bundle inlines; only the proto package stays, for its .proto files (reflection). */
const packagesKeptAtRunTime = new Set(["proto"]);

/** Tools that must never reach a runtime image (no TypeScript loader or compiler at run time). */
export const buildOnlyPackages = ["tsx", "esbuild", "typescript", "vitest", "vite", "@biomejs/biome"];

export function packageService(service: string, out: string): void {
  if (!(serviceNames as readonly string[]).includes(service))
    throw new Error(`unknown service ${service}: one of ${serviceNames.join(", ")}`);
  const dist = join(repoRoot, "services", service, "dist");
  if (!existsSync(join(dist, "main.js"))) throw new Error(`${dist}/main.js is missing: run \`make build\` first`);
  const staging = `${out}.deploy`;
  rmSync(out, { recursive: true, force: true });
  rmSync(staging, { recursive: true, force: true });
  // --prod: dependencies only. Injected workspace packages: what the lockfile pins, no symlinks out of
  // the tree. Hoisted: a flat node_modules, so dist/main.js resolves every external from /app/node_modules.
  execFileSync(
    "pnpm",
    [
      "--filter",
      `@prefix-guard/${service}`,
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
  const [service, out] = process.argv.slice(2);
  if (!service || !out) {
    process.stderr.write("usage: package-service.ts <service> <out-dir>\n");
    process.exit(2);
  }
  packageService(service, resolve(out));
  process.stdout.write(`packaged ${service} into ${out}\n`);
}
