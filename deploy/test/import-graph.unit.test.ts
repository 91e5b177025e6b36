// The import-graph check (deploy/scripts/import-graph.ts) on small trees written to a temp dir: a
// clean tree passes, and each rule (application/ importing adapters/, a cycle of type-only imports,
// a service importing another by package name or by path) fails naming file, line and rule.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkImportGraph, formatReport } from "../scripts/import-graph";

const packageJson = (name: string, exports: Record<string, string>) => JSON.stringify({ name, exports });

/** A service "alpha" in the shape CONTRIBUTING describes, a service "beta" and a lib, all clean. */
const CLEAN: Readonly<Record<string, string>> = {
  "libs/util/package.json": packageJson("@prefix-guard/util", { ".": "./src/index.ts" }),
  "libs/util/src/index.ts": "export const twice = (n: number) => 2 * n;\n",
  "services/alpha/package.json": packageJson("@prefix-guard/alpha", { ".": "./src/index.ts" }),
  "services/alpha/src/index.ts": 'export { startAlpha } from "./service";\n',
  "services/alpha/src/domain/model.ts": "export interface Row { readonly id: string }\n",
  "services/alpha/src/domain/rules.ts":
    'import type { Row } from "./model";\nexport const idOf = (row: Row) => row.id;\n',
  "services/alpha/src/application/store-port.ts":
    'import type { Row } from "../domain/model";\nexport interface RowStore { load(id: string): Promise<Row> }\n',
  "services/alpha/src/application/use-case.ts": [
    'import { twice } from "@prefix-guard/util";',
    'import { idOf } from "../domain/rules";',
    'import type { RowStore } from "./store-port";',
    "export const run = async (store: RowStore) => twice(idOf(await store.load('a')).length);",
    "",
  ].join("\n"),
  "services/alpha/src/adapters/mysql/row-store.ts":
    'import type { RowStore } from "../../application/store-port";\nexport const rowStore: RowStore = { load: async (id) => ({ id }) };\n',
  "services/alpha/src/service.ts":
    'import { rowStore } from "./adapters/mysql/row-store";\nimport { run } from "./application/use-case";\nexport const startAlpha = () => run(rowStore);\n',
  // Tests may import another service.
  "services/alpha/src/application/use-case.int.test.ts":
    'import { startBeta } from "@prefix-guard/beta";\nstartBeta();\n',
  "services/alpha/test/fixtures.ts": 'export { startBeta } from "../../beta/src/index";\n',
  "services/beta/package.json": packageJson("@prefix-guard/beta", { ".": "./src/index.ts" }),
  "services/beta/src/index.ts": "export const startBeta = () => 0;\n",
};

let roots: string[] = [];
afterEach(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
  roots = [];
});

function tree(files: Readonly<Record<string, string>>): string {
  const root = mkdtempSync(join(tmpdir(), "import-graph-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const violationsOf = (root: string) =>
  checkImportGraph(root).violations.map((v) => `${v.file}:${v.line} ${v.rule} ${v.specifier}`);

describe("import-graph check", () => {
  it("passes a tree that keeps the rules, tests importing another service included", () => {
    const report = checkImportGraph(tree(CLEAN));
    expect(report.files).toBe(11);
    expect(report.imports).toBe(11);
    expect(report.violations).toEqual([]);
    expect(report.cycles).toEqual([]);
    expect(formatReport(report).failed).toBe(false);
  });

  it("fails on application/ importing its service's adapters/, type-only or not", () => {
    const root = tree({
      ...CLEAN,
      "services/alpha/src/application/use-case.ts": [
        'import { twice } from "@prefix-guard/util";',
        'import type { rowStore } from "../adapters/mysql/row-store";',
        "export const run = (store: typeof rowStore) => twice(store === undefined ? 0 : 1);",
        "",
      ].join("\n"),
    });
    expect(violationsOf(root)).toEqual([
      "services/alpha/src/application/use-case.ts:2 application-imports-adapters ../adapters/mysql/row-store",
    ]);
    const { text, failed } = formatReport(checkImportGraph(root));
    expect(failed).toBe(true);
    expect(text).toContain(
      "services/alpha/src/application/use-case.ts:2: application-imports-adapters: " + '"../adapters/mysql/row-store"',
    );
  });

  it("fails on a cycle of type-only imports and prints its path with the import lines", () => {
    const report = checkImportGraph(
      tree({
        ...CLEAN,
        "services/alpha/src/domain/model.ts":
          '// the row\nimport type { idOf } from "./rules";\nexport interface Row { readonly id: ReturnType<typeof idOf> }\n',
      }),
    );
    expect(report.violations).toEqual([]);
    expect(report.cycles).toEqual([
      [
        "services/alpha/src/domain/model.ts:2",
        "services/alpha/src/domain/rules.ts:1",
        "services/alpha/src/domain/model.ts",
      ],
    ]);
    const { text, failed } = formatReport(report);
    expect(failed).toBe(true);
    expect(text).toContain(
      "import-cycle: services/alpha/src/domain/model.ts:2 -> services/alpha/src/domain/rules.ts:1 -> services/alpha/src/domain/model.ts",
    );
  });

  it("fails on a cycle through a re-export and a package name", () => {
    const report = checkImportGraph(
      tree({
        ...CLEAN,
        "libs/util/src/index.ts":
          'export type { Row } from "@prefix-guard/alpha";\nexport const twice = (n: number) => 2 * n;\n',
        "services/alpha/src/index.ts":
          'export { startAlpha } from "./service";\nexport type { Row } from "./domain/model";\n',
      }),
    );
    expect(report.cycles.map((cycle) => cycle.map((step) => step.replace(/:\d+$/, "")))).toEqual([
      [
        "libs/util/src/index.ts",
        "services/alpha/src/index.ts",
        "services/alpha/src/service.ts",
        "services/alpha/src/application/use-case.ts",
        "libs/util/src/index.ts",
      ],
    ]);
  });

  it("fails on a service importing another, by package name or by a relative path", () => {
    const root = tree({
      ...CLEAN,
      "services/alpha/src/service.ts": [
        'import { startBeta } from "@prefix-guard/beta";',
        'import { startBeta as again } from "../../beta/src/index";',
        'import { rowStore } from "./adapters/mysql/row-store";',
        'import { run } from "./application/use-case";',
        "export const startAlpha = () => [run(rowStore), startBeta(), again()];",
        "",
      ].join("\n"),
    });
    expect(violationsOf(root)).toEqual([
      "services/alpha/src/service.ts:1 service-imports-service @prefix-guard/beta",
      "services/alpha/src/service.ts:2 service-imports-service ../../beta/src/index",
    ]);
  });
});
