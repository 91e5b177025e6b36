// The import-graph check (`make lint`, `make test`): every import of every .ts file under services/
// and libs/, type-only imports included, against three rules the layout promises (CONTRIBUTING
// "Layout"):
// - application-imports-adapters: a service's application/ declares the ports its adapters
//   implement, so nothing in application/ names a module of that service's adapters/;
// - import-cycle: no cycle of imports, type-only ones included (a cycle means neither side can be
//   read, tested or moved without the other);
// - service-imports-service: a service talks to another over gRPC or events, never by importing it
//   (by package name or by a relative path into services/<other>). Tests (*.test.ts and a service's
//   test/) may import services, as bench/ and deploy/ do.
// Every violation fails: there is no list of tolerated exceptions (the one it began with, eleven
// application-to-adapters imports, was emptied and removed).
//   node --import tsx deploy/scripts/import-graph.ts        exit 1 on any violation or cycle
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";

export const SCANNED_ROOTS = ["services", "libs"] as const;
const SKIPPED_DIRECTORIES = new Set(["node_modules", "dist", "gen", ".run", ".data", ".cache"]);
const SOURCE_CONDITIONS = ["@prefix-guard/source", "import", "default"];

export type ImportGraphRule = "application-imports-adapters" | "import-cycle" | "service-imports-service";

/** One import statement (or `export … from`, `import("…")`) of a scanned file. */
export interface ImportEdge {
  /** Repository-relative path of the importing file, with forward slashes. */
  readonly from: string;
  readonly line: number;
  readonly specifier: string;
  /** Repository-relative path of the imported file; null for npm packages and non-TypeScript files. */
  readonly to: string | null;
  /** The workspace package directory a package specifier names ("services/gateway"), else null. */
  readonly packageDir: string | null;
}

export interface ImportViolation {
  readonly rule: ImportGraphRule;
  readonly file: string;
  readonly line: number;
  readonly specifier: string;
  readonly message: string;
}

export interface ImportGraphReport {
  readonly files: number;
  readonly imports: number;
  /** Each fails the check. */
  readonly violations: readonly ImportViolation[];
  /**
   * One cycle per strongly connected group of files: "file:line" of each import along it, back to
   * the file it started from.
   */
  readonly cycles: readonly (readonly string[])[];
}

const toPosix = (path: string) => path.split(sep).join("/");

function listTypeScriptFiles(dir: string, out: string[] = []): string[] {
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIPPED_DIRECTORIES.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) listTypeScriptFiles(path, out);
    else if (/\.(ts|mts|tsx)$/.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

interface WorkspacePackage {
  readonly dir: string;
  readonly exports: unknown;
}

/** Workspace packages by name, from the package.json of every directory pnpm-workspace.yaml lists. */
function workspacePackages(root: string): Map<string, WorkspacePackage> {
  const packages = new Map<string, WorkspacePackage>();
  const candidates = ["libs", "services"].flatMap((group) => {
    const dir = join(root, group);
    return existsSync(dir) ? readdirSync(dir).map((name) => `${group}/${name}`) : [];
  });
  for (const dir of [...candidates, "proto", "migrations", "bench", "deploy"]) {
    const manifest = join(root, dir, "package.json");
    if (!existsSync(manifest)) continue;
    const parsed = JSON.parse(readFileSync(manifest, "utf8")) as { name?: string; exports?: unknown };
    if (parsed.name !== undefined) packages.set(parsed.name, { dir, exports: parsed.exports });
  }
  return packages;
}

/** The target of one `exports` entry: a path, or the first condition this repository resolves with. */
function exportTarget(entry: unknown): string | null {
  if (typeof entry === "string") return entry;
  if (entry === null || typeof entry !== "object") return null;
  const conditions = entry as Record<string, unknown>;
  for (const condition of SOURCE_CONDITIONS) {
    const target = exportTarget(conditions[condition]);
    if (target !== null) return target;
  }
  return null;
}

function exportedPath(exports: unknown, subpath: string): string | null {
  if (typeof exports === "string") return subpath === "." ? exports : null;
  if (exports === null || typeof exports !== "object") return null;
  const map = exports as Record<string, unknown>;
  if (subpath in map) return exportTarget(map[subpath]);
  for (const [pattern, target] of Object.entries(map)) {
    const star = pattern.indexOf("*");
    if (star < 0) continue;
    const prefix = pattern.slice(0, star);
    const suffix = pattern.slice(star + 1);
    if (!subpath.startsWith(prefix) || !subpath.endsWith(suffix)) continue;
    const resolved = exportTarget(target);
    if (resolved !== null) return resolved.replace("*", subpath.slice(prefix.length, subpath.length - suffix.length));
  }
  return null;
}

/** The TypeScript file an extensionless or .js-suffixed path names, as the bundler resolution finds it. */
function typeScriptFile(absolute: string): string | null {
  const base = absolute.replace(/\.(m?js)$/, "");
  const candidates = [absolute, `${base}.ts`, `${base}.mts`, `${base}.tsx`, join(absolute, "index.ts")];
  for (const candidate of candidates) {
    if (/\.(ts|mts|tsx)$/.test(candidate) && existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return null;
}

function resolveSpecifier(
  root: string,
  fromFile: string,
  specifier: string,
  packages: ReadonlyMap<string, WorkspacePackage>,
): { to: string | null; packageDir: string | null } {
  if (specifier.startsWith(".")) {
    const file = typeScriptFile(resolve(dirname(fromFile), specifier));
    return { to: file === null ? null : toPosix(relative(root, file)), packageDir: null };
  }
  const match = /^(@[^/]+\/[^/]+|[^@/][^/]*)(\/.*)?$/.exec(specifier);
  const workspacePackage = match?.[1] === undefined ? undefined : packages.get(match[1]);
  if (workspacePackage === undefined) return { to: null, packageDir: null };
  const subpath = `.${match?.[2] ?? ""}`;
  const target = exportedPath(workspacePackage.exports, subpath);
  const file = target === null ? null : typeScriptFile(join(root, workspacePackage.dir, target));
  return { to: file === null ? null : toPosix(relative(root, file)), packageDir: workspacePackage.dir };
}

/**
 * Every import of one file, type-only ones as much as the others: static imports and re-exports,
 * `import x = require()`, `import()` and `import("…").T`.
 */
function importsOf(text: string, fileName: string): { specifier: string; line: number }[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: { specifier: string; line: number }[] = [];
  const add = (node: ts.Node, specifier: ts.Node | undefined) => {
    if (specifier === undefined || !ts.isStringLiteralLike(specifier)) return;
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    found.push({ specifier: specifier.text, line });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      add(node, node.moduleSpecifier);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node, node.moduleReference.expression);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0]);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node, node.argument.literal);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Every .ts file under `roots` of `root`, and every import edge of each. */
export function scanImports(
  root: string,
  roots: readonly string[] = SCANNED_ROOTS,
): { files: readonly string[]; edges: readonly ImportEdge[] } {
  const packages = workspacePackages(root);
  const files = roots.flatMap((dir) => listTypeScriptFiles(join(root, dir))).sort();
  const edges = files.flatMap((file) =>
    importsOf(readFileSync(file, "utf8"), file).map(({ specifier, line }) => ({
      from: toPosix(relative(root, file)),
      line,
      specifier,
      ...resolveSpecifier(root, file, specifier, packages),
    })),
  );
  return { files: files.map((file) => toPosix(relative(root, file))), edges };
}

const isTest = (file: string) => /\.test\.ts$/.test(file) || /^services\/[^/]+\/test\//.test(file);
const serviceOf = (path: string | null) =>
  path === null ? null : (/^services\/([^/]+)(?:\/|$)/.exec(path)?.[1] ?? null);

/** The rule one import breaks, if any (cycles are a property of the whole graph, see findCycles). */
export function importViolation(edge: ImportEdge): ImportViolation | null {
  const at = { file: edge.from, line: edge.line, specifier: edge.specifier };
  const fromService = serviceOf(edge.from);
  if (fromService === null || isTest(edge.from)) return null;
  const application = `services/${fromService}/src/application/`;
  const adapters = `services/${fromService}/src/adapters/`;
  if (edge.from.startsWith(application) && edge.to?.startsWith(adapters) === true) {
    return {
      rule: "application-imports-adapters",
      ...at,
      message: `application/ imports ${edge.to}: declare the port in application/ and let the adapter implement it`,
    };
  }
  const targetService = serviceOf(edge.packageDir) ?? serviceOf(edge.to);
  if (targetService !== null && targetService !== fromService) {
    return {
      rule: "service-imports-service",
      ...at,
      message: `service ${fromService} imports service ${targetService}: call it over gRPC or consume its events`,
    };
  }
  return null;
}

/**
 * One cycle per strongly connected group of files (Tarjan), each the shortest way from the group's
 * first file (by name) back to itself. Type-only imports count: they tie the files together as much.
 */
export function findCycles(edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const edge of edges) {
    if (edge.to === null) continue;
    const targets = next.get(edge.from) ?? new Set<string>();
    targets.add(edge.to);
    next.set(edge.from, targets);
  }
  const nodes = [...new Set(edges.flatMap((edge) => (edge.to === null ? [edge.from] : [edge.from, edge.to])))].sort();
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const groups: string[][] = [];
  let counter = 0;
  const connect = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of [...(next.get(node) ?? [])].sort()) {
      if (!index.has(target)) {
        connect(target);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(target) ?? 0));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(target) ?? 0));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      group.push(member);
      if (member === node) break;
    }
    if (group.length > 1 || next.get(node)?.has(node) === true) groups.push(group.sort());
  };
  for (const node of nodes) if (!index.has(node)) connect(node);
  return groups.map((group) => shortestCycle(group, next)).sort((a, b) => (a[0] ?? "").localeCompare(b[0] ?? ""));
}

function shortestCycle(group: readonly string[], next: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const start = group[0] ?? "";
  const members = new Set(group);
  const previous = new Map<string, string>();
  const queue = [start];
  for (let head = 0; head < queue.length; head += 1) {
    const node = queue[head] ?? "";
    for (const target of [...(next.get(node) ?? [])].sort()) {
      if (!members.has(target)) continue;
      if (target === start) {
        const path = [node];
        for (let step = previous.get(node); step !== undefined; step = previous.get(step)) path.push(step);
        return [...path.reverse(), start];
      }
      if (previous.has(target)) continue;
      previous.set(target, node);
      queue.push(target);
    }
  }
  return [start, start];
}

export function checkImportGraph(root: string, roots: readonly string[] = SCANNED_ROOTS): ImportGraphReport {
  const { files, edges } = scanImports(root, roots);
  return {
    files: files.length,
    imports: edges.length,
    violations: edges.flatMap((edge) => importViolation(edge) ?? []),
    cycles: findCycles(edges).map((cycle) =>
      cycle.map((file, i) => {
        const to = cycle[i + 1];
        const edge = to === undefined ? undefined : edges.find((e) => e.from === file && e.to === to);
        return edge === undefined ? file : `${file}:${edge.line}`;
      }),
    ),
  };
}

/** The check's output; `failed` is what the exit code says. */
export function formatReport(report: ImportGraphReport): { text: string; failed: boolean } {
  const lines = [
    ...report.violations.map((v) => `${v.file}:${v.line}: ${v.rule}: "${v.specifier}": ${v.message}`),
    ...report.cycles.map((cycle) => `${cycle[0]}: import-cycle: ${cycle.join(" -> ")}`),
  ];
  const failed = report.violations.length + report.cycles.length > 0;
  lines.push(
    `import graph: ${report.files} files, ${report.imports} imports; ${report.violations.length} violations, ` +
      `${report.cycles.length} cycles` +
      (failed ? ": FAILED" : ""),
  );
  return { text: `${lines.join("\n")}\n`, failed };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = resolve(import.meta.dirname, "../..");
  const report = checkImportGraph(root);
  const { text, failed } = formatReport(report);
  (failed ? process.stderr : process.stdout).write(text);
  process.exitCode = failed ? 1 : 0;
}
