// The closed list of `pg-reason` values (libs/errors ERROR_REASONS) against the error table of
// docs/integration.md: every reason a caller can get has its row, every reason a row names exists,
// and the internal ones are named in the note under the table.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ERROR_REASONS } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";

const guide = readFileSync(join(import.meta.dirname, "../../docs/integration.md"), "utf8");
const section = guide.slice(guide.indexOf("## Errors a harness must handle"), guide.indexOf("## Worked examples"));

/** The backquoted names in the reason column (the second) of the table's rows. */
const tableReasons = new Set(
  section
    .split("\n")
    .filter((line) => /^\| [A-Z_]+ \|/.test(line))
    .flatMap((line) => [...(line.split("|")[2] ?? "").matchAll(/`([a-z0-9_]+)`/g)].map((match) => match[1] as string)),
);

const internalNote = section.slice(section.indexOf("Internal reasons"));
const internalReasons = new Set([...internalNote.matchAll(/`([a-z0-9_]+)`/g)].map((match) => match[1] as string));

describe("error reasons", () => {
  it("documents every reason: in the table, or as internal under it", () => {
    const undocumented = ERROR_REASONS.filter((reason) => !tableReasons.has(reason) && !internalReasons.has(reason));
    expect(undocumented).toEqual([]);
  });

  it("names no reason in the table that ERROR_REASONS does not have", () => {
    const known = new Set<string>(ERROR_REASONS);
    expect([...tableReasons].filter((reason) => !known.has(reason))).toEqual([]);
    expect(tableReasons.size).toBeGreaterThan(30);
  });
});
