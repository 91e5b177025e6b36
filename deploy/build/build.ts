// `make build`: compiles every service (its main.js, the migrations Job's migrate.js and the container
// probe) and prefixctl to plain JavaScript with esbuild, so production runs `node dist/main.js` with no
// TypeScript loader. Workspace code (@prefix-guard/*, the generated proto code) and most npm packages
// are bundled; the few `runtimeExternals` load from the deployed package's production node_modules
// (`pnpm deploy --prod`, see package-service.ts), which keeps the better-sqlite3 addon and knex's
// lazily required drivers working unchanged.
//   node --import tsx deploy/build/build.ts            (all targets)
//   node --import tsx deploy/build/build.ts --metafile (also writes dist/meta.json per target)
import { existsSync, readFileSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { type BuildOptions, build, type Plugin } from "esbuild";

const repoRoot = resolve(import.meta.dirname, "../..");

export interface BuildTarget {
  /** Directory whose dist/ receives the output, relative to the repository root. */
  readonly packageDir: string;
  /** Entry file (relative to packageDir) → output name inside dist/ (without .js). */
  readonly entries: Readonly<Record<string, string>>;
}

/** The gRPC services: each with its migrations Job's entry and the gRPC container probe. */
export const serviceNames = ["session-events", "rules-snapshot", "prompt-assembly", "cache-monitor"] as const;

/** The container probe, compiled once per service next to its main.js (the image copies dist/ whole). */
const probeEntry = "../../deploy/docker/grpc-health-check.ts";

export const buildTargets: readonly BuildTarget[] = [
  ...serviceNames.map((service) => ({
    packageDir: `services/${service}`,
    entries: { main: "src/main.ts", migrate: "src/migrate.ts", "grpc-health-check": probeEntry },
  })),
  // The gateway serves HTTP: its image probes /readyz with the HTTP probe.
  {
    packageDir: "services/gateway",
    entries: {
      main: "src/main.ts",
      migrate: "src/migrate.ts",
      "http-health-check": "../../deploy/docker/http-health-check.ts",
      // The observation thread's entry, loaded by main.js from beside it (observation-pipeline.ts).
      "observation-worker": "src/observation-worker.ts",
    },
  },
  { packageDir: "libs/prefixctl", entries: { prefixctl: "src/main.ts" } },
];

/**
 * npm packages left out of the bundle and loaded from the deployed node_modules at run time: a native
 * addon, knex with the drivers it requires by dialect name, and packages found by file path or
 * patched through require hooks. Everything else, workspace code included, is bundled, each import
 * bound to the version its importer resolves in the workspace (a flat node_modules could not keep
 * two versions of one package apart).
 */
export const runtimeExternals = [
  "better-sqlite3",
  "knex",
  "mysql2",
  "pino",
  "@grpc/grpc-js",
  "@grpc/reflection",
  "grpc-health-check",
];
/** Drivers knex requires by name for dialects we never configure; they are not installed. */
const absentKnexDrivers = ["pg", "pg-query-stream", "sqlite3", "oracledb", "tedious", "mysql"];

const packageNameOf = (specifier: string) =>
  specifier
    .split("/")
    .slice(0, specifier.startsWith("@") ? 2 : 1)
    .join("/");

/** The version of an npm package that `importer` resolves, found the way Node does (up the tree). */
function resolvedVersion(packageName: string, importer: string): string | undefined {
  for (let dir = dirname(importer); ; dir = dirname(dir)) {
    const manifest = join(dir, "node_modules", packageName, "package.json");
    if (existsSync(manifest)) return (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version;
    if (dirname(dir) === dir) return undefined;
  }
}

/** Name → version of every runtime external a build imports, as the workspace resolved it. */
export type ExternalVersions = Record<string, string>;
export const externalsManifest = "externals.json";

/**
 * Leaves the runtime externals out and records which version each importer resolved: the deployed
 * node_modules is flat, so all importers must agree, and the packaging step checks the deployed
 * copy is that version (otherwise the compiled service would run code the tests never ran).
 */
function runtimeExternalsPlugin(versions: Map<string, string>): Plugin {
  const external = new Set([...runtimeExternals, ...absentKnexDrivers]);
  return {
    name: "runtime-externals",
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter: /^[^./]/ }, (args) => {
        const name = packageNameOf(args.path);
        if (!external.has(name)) return undefined;
        const version = resolvedVersion(name, args.importer);
        if (version !== undefined) {
          const seen = versions.get(name);
          if (seen !== undefined && seen !== version)
            return { errors: [{ text: `${name}: imported as ${seen} and as ${version} (from ${args.importer})` }] };
          versions.set(name, version);
        }
        return { path: args.path, external: true };
      });
    },
  };
}

function optionsFor(target: BuildTarget, metafile: boolean, versions: Map<string, string>): BuildOptions {
  const packageDir = join(repoRoot, target.packageDir);
  return {
    absWorkingDir: packageDir,
    entryPoints: Object.entries(target.entries).map(([out, entry]) => ({ in: entry, out })),
    outdir: "dist",
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    sourcemap: "linked",
    // One file per entry: the probe must not share chunks with main.js to stay small to load.
    splitting: false,
    metafile,
    logLevel: "warning",
    plugins: [runtimeExternalsPlugin(versions)],
    // Bundled CommonJS packages call require() for Node built-ins; an ES module has none of its own.
    banner: {
      js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);',
    },
  };
}

export async function buildAll(options: { metafile?: boolean } = {}): Promise<void> {
  for (const target of buildTargets) {
    const dist = join(repoRoot, target.packageDir, "dist");
    await rm(dist, { recursive: true, force: true });
    const versions = new Map<string, string>();
    const result = await build(optionsFor(target, options.metafile ?? false, versions));
    await mkdir(dist, { recursive: true });
    const externals: ExternalVersions = Object.fromEntries([...versions].sort());
    await writeFile(join(dist, externalsManifest), `${JSON.stringify(externals, null, 2)}\n`);
    if (result.metafile) await writeFile(join(dist, "meta.json"), JSON.stringify(result.metafile));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = performance.now();
  await buildAll({ metafile: process.argv.includes("--metafile") });
  process.stdout.write(
    `built ${buildTargets.map((t) => `${t.packageDir}/dist`).join(", ")} in ${Math.round(performance.now() - started)} ms\n`,
  );
}
