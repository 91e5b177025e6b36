// Builds the publishable @prefix-guard/client into dist/: ESM JavaScript and .d.ts, with the code it
// needs from the workspace (libs/errors, libs/grpc's client part, the ts-proto output of `make proto`)
// compiled into the package, so an install pulls only npm dependencies.
//
// 1. From src/index.ts, follow every import. A workspace import (@prefix-guard/*) is resolved
//    through that package's "exports" and copied under build/internal/<package>/; a relative import
//    stays relative. Every specifier is rewritten to the relative `.js` path Node's ESM loader needs.
// 2. tsc -p tsconfig.build.json compiles build/ to dist/ (NodeNext checks each specifier resolves);
//    build/ is removed after a successful compile.
// Any other import must be a node: builtin or a dependency listed in package.json, or the build fails.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repo = resolve(packageDir, "../..");
const stagingDir = join(packageDir, "build");
const distDir = join(packageDir, "dist");
const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
const dependencies = new Set(Object.keys(manifest.dependencies ?? {}));

/** name → directory of every workspace package that may be compiled in. */
const workspace = new Map();
for (const parent of ["libs", "."]) {
  for (const entry of parent === "." ? ["proto"] : readdirSync(join(repo, parent))) {
    const file = join(repo, parent, entry, "package.json");
    if (existsSync(file)) workspace.set(JSON.parse(readFileSync(file, "utf8")).name, join(repo, parent, entry));
  }
}

/** Where a source file goes inside build/ (and so dist/). */
function stagedPath(source) {
  const own = join(packageDir, "src") + sep;
  if (source.startsWith(own)) return source.slice(own.length);
  const protoGen = join(repo, "proto", "gen", "prefixguard") + sep;
  if (source.startsWith(protoGen)) return join("internal", "proto", source.slice(protoGen.length));
  const lib = /^libs\/([^/]+)\/src\/(.+)$/.exec(relative(repo, source).split(sep).join("/"));
  if (lib) return join("internal", lib[1], lib[2]);
  throw new Error(`${source}: not a file the client package can embed`);
}

function tsFile(base) {
  for (const candidate of [`${base}.ts`, join(base, "index.ts"), base])
    if (candidate.endsWith(".ts") && existsSync(candidate)) return candidate;
  throw new Error(`cannot resolve ${base}`);
}

function resolveWorkspace(specifier, from) {
  const [scope, name, ...rest] = specifier.split("/");
  const dir = workspace.get(`${scope}/${name}`);
  if (dir === undefined) throw new Error(`${from}: ${specifier} is not a workspace package`);
  const exports = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).exports ?? {};
  const subpath = rest.length === 0 ? "." : `./${rest.join("/")}`;
  if (typeof exports[subpath] === "string") return resolve(dir, exports[subpath]);
  for (const [pattern, target] of Object.entries(exports)) {
    const star = pattern.indexOf("*");
    if (star < 0 || typeof target !== "string") continue;
    const [prefix, suffix] = [pattern.slice(0, star), pattern.slice(star + 1)];
    if (subpath.startsWith(prefix) && subpath.endsWith(suffix) && subpath.length >= pattern.length - 1)
      return resolve(dir, target.replace("*", subpath.slice(prefix.length, subpath.length - suffix.length)));
  }
  throw new Error(`${from}: ${specifier} is not exported by ${dir}`);
}

const specifierPattern = /(\bfrom\s*|\bimport\s*\(?\s*)(["'])([^"']+)\2/g;
const staged = new Map();
const queue = [join(packageDir, "src", "index.ts")];
while (queue.length > 0) {
  const source = queue.pop();
  if (staged.has(source)) continue;
  const target = stagedPath(source);
  const text = readFileSync(source, "utf8").replace(specifierPattern, (whole, keyword, quote, specifier) => {
    let resolved;
    if (specifier.startsWith(".")) resolved = tsFile(resolve(dirname(source), specifier));
    else if (specifier.startsWith("@prefix-guard/")) resolved = resolveWorkspace(specifier, source);
    else {
      const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0];
      if (!specifier.startsWith("node:") && !dependencies.has(name))
        throw new Error(`${source} imports ${specifier}: add ${name} to dependencies in package.json`);
      return whole;
    }
    queue.push(resolved);
    let path = relative(dirname(target), stagedPath(resolved)).split(sep).join("/").replace(/\.ts$/, ".js");
    if (!path.startsWith(".")) path = `./${path}`;
    return `${keyword}${quote}${path}${quote}`;
  });
  staged.set(source, { target, text });
}

rmSync(stagingDir, { recursive: true, force: true });
rmSync(distDir, { recursive: true, force: true });
for (const { target, text } of staged.values()) {
  mkdirSync(dirname(join(stagingDir, target)), { recursive: true });
  writeFileSync(join(stagingDir, target), text);
}
const tsc = createRequire(join(repo, "package.json")).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", join(packageDir, "tsconfig.build.json")], { stdio: "inherit" });
rmSync(stagingDir, { recursive: true, force: true });
copyFileSync(join(repo, "LICENSE"), join(distDir, "LICENSE"));
process.stdout.write(`@prefix-guard/client: ${staged.size} files compiled into ${relative(repo, distDir)}/\n`);
