// Dependencies that tell the truth: one OpenTelemetry generation in the lockfile (the SDK's span
// processors and the NodeSDK they are handed to must come from the same release), and no
// workspace package declaring a dependency that nothing of it imports.

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const repoRoot = join(import.meta.dirname, "../..");

/** OpenTelemetry packages versioned on their own: the API and the conventions. */
const OTEL_INDEPENDENT = new Set([
  "@opentelemetry/api",
  "@opentelemetry/api-logs",
  "@opentelemetry/semantic-conventions",
]);

/** name → versions of every @opentelemetry package the lockfile resolves. */
function lockedOpenTelemetry(): Map<string, Set<string>> {
  const lock = readFileSync(join(repoRoot, "pnpm-lock.yaml"), "utf8");
  const found = new Map<string, Set<string>>();
  for (const match of lock.matchAll(/^ {2}'(@opentelemetry\/[a-z0-9-]+)@(\d+\.\d+\.\d+)[^']*':/gm)) {
    const [, name, version] = match as unknown as [string, string, string];
    const versions = found.get(name) ?? new Set<string>();
    versions.add(version);
    found.set(name, versions);
  }
  return found;
}

/** A release line: the major for 1.x and later, major.minor for the 0.x (experimental) packages. */
const generationOf = (version: string): string => {
  const [major, minor] = version.split(".");
  return major === "0" ? `0.${minor}` : String(major);
};

const SKIPPED_DIRECTORIES = new Set(["node_modules", "gen", "dist", ".run", ".data", ".git", ".cache"]);
const WORKSPACE_ROOTS = ["libs", "services"];
const TOP_PACKAGES = ["bench", "deploy", "proto", "migrations"];

function sourceFiles(dir: string, nested: boolean, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIPPED_DIRECTORIES.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      // The repository root's own files only: its sub-packages are checked on their own.
      if (!nested && [...WORKSPACE_ROOTS, ...TOP_PACKAGES].includes(entry.name)) continue;
      sourceFiles(path, true, out);
    } else if (/\.(ts|mts|mjs|js|cjs)$/.test(entry.name)) out.push(path);
  }
  return out;
}

/**
 * Declared but never imported by name, on purpose. Each says why; an entry that stops being true
 * (the package is imported, or no longer declared) fails the test so the list only shrinks.
 */
const DECLARED_WITHOUT_IMPORT: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  ".": {
    "@biomejs/biome": "the formatter and linter (make lint)",
    tsx: "runs the TypeScript entry points (node --import tsx)",
    typescript: "tsc (make lint)",
    vite: "vitest's bundler, pinned (vitest 4 with vite 8.3)",
    "@prefix-guard/prefixctl": "links the prefixctl bin at the root",
  },
  proto: {
    "@bufbuild/buf": "the protobuf compiler (buf generate)",
    "ts-proto": "the buf plugin that writes gen/",
    "@bufbuild/protobuf": "imported by the generated code in gen/",
    "@grpc/grpc-js": "imported by the generated code in gen/",
  },
  "libs/client": {
    "@bufbuild/protobuf": "imported by the generated code it compiles in",
    "@opentelemetry/api": "a peer of what it exports (trace context in metadata)",
  },
  "libs/db": {
    mysql2: "the driver knex loads by dialect name",
    "better-sqlite3": "the driver knex loads by dialect name",
  },
  "libs/runtime": { knex: "a runtime external its bundle loads (deploy/build)" },
  "libs/prefixctl": { tsx: "bin/prefixctl.mjs runs the sources through it in a development checkout" },
  "services/cache-monitor": { tsx: "the start script" },
  "services/prompt-assembly": {
    tsx: "the start script",
    "@grpc/grpc-js": "a runtime external of its bundle: the deployed package must hold it",
  },
  "services/rules-snapshot": {
    tsx: "the start script",
    "@grpc/grpc-js": "a runtime external of its bundle: the deployed package must hold it",
  },
  "services/session-events": { tsx: "the start script" },
};

function workspacePackages(): string[] {
  return [
    ".",
    ...TOP_PACKAGES,
    ...WORKSPACE_ROOTS.flatMap((root) => readdirSync(join(repoRoot, root)).map((name) => `${root}/${name}`)),
  ].filter((dir) => existsSync(join(repoRoot, dir, "package.json")));
}

describe("dependencies", () => {
  it("the lockfile holds one OpenTelemetry generation: one version per package, one stable and one experimental line", () => {
    const locked = lockedOpenTelemetry();
    expect(locked.size).toBeGreaterThan(3);
    const lines = new Set<string>();
    for (const [name, versions] of locked) {
      expect([...versions], name).toHaveLength(1);
      if (!OTEL_INDEPENDENT.has(name)) for (const version of versions) lines.add(generationOf(version));
    }
    // e.g. {"3", "0.301"}: the SDK 3.x packages and the 0.301 experimental ones released with them.
    expect(
      [...lines].filter((line) => !line.startsWith("0.")),
      [...lines].join(", "),
    ).toHaveLength(1);
    expect(
      [...lines].filter((line) => line.startsWith("0.")),
      [...lines].join(", "),
    ).toHaveLength(1);
  });

  it("every declared dependency of a workspace package is imported by it, or listed with its reason", () => {
    const unused: string[] = [];
    const staleReasons: string[] = [];
    for (const dir of workspacePackages()) {
      const manifest = JSON.parse(readFileSync(join(repoRoot, dir, "package.json"), "utf8")) as {
        dependencies?: Record<string, string>;
        devDependencies?: Record<string, string>;
      };
      const declared = Object.keys({ ...manifest.dependencies, ...manifest.devDependencies }).filter(
        (name) => !name.startsWith("@types/"),
      );
      const text = sourceFiles(join(repoRoot, dir), dir !== ".")
        .map((file) => readFileSync(file, "utf8"))
        .join("\n");
      const allowed = DECLARED_WITHOUT_IMPORT[dir] ?? {};
      for (const name of declared) {
        const escaped = name.replace(/[/.]/g, (character) => `\\${character}`);
        const imported = new RegExp(`(?:from |import\\(|require\\(|import )["']${escaped}(?:/[^"']*)?["']`).test(text);
        if (!imported && !(name in allowed)) unused.push(`${dir}: ${name}`);
        if (imported && name in allowed) staleReasons.push(`${dir}: ${name} is imported now`);
      }
      for (const name of Object.keys(allowed))
        if (!declared.includes(name)) staleReasons.push(`${dir}: ${name} is no longer declared`);
    }
    expect(unused, "declared, never imported: remove it or list it with its reason").toEqual([]);
    expect(staleReasons, "DECLARED_WITHOUT_IMPORT lists what is no longer true").toEqual([]);
  });
});
