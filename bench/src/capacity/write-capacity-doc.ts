// `make docs-capacity`: renders docs/capacity.md from the committed bench results.
//   node --import tsx bench/src/capacity/write-capacity-doc.ts
// make bench runs it after writing new results, and capacity-doc.unit.test.ts fails while the
// committed document is not what the committed results render.
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { benchFigures } from "./figures";
import { capacityModel } from "./model";
import { CAPACITY_DOC, renderCapacityDoc } from "./render";

export const repoRoot = resolve(import.meta.dirname, "../../..");

/** The document the committed results render (reads bench/results/speed.json and gateway.json). */
export function renderCommittedCapacityDoc(root: string = repoRoot): string {
  const read = (path: string) => JSON.parse(readFileSync(resolve(root, path), "utf8")) as unknown;
  const figures = benchFigures(read("bench/results/speed.json"), read("bench/results/gateway.json"));
  return renderCapacityDoc(capacityModel(figures));
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const path = resolve(repoRoot, CAPACITY_DOC);
  const text = renderCommittedCapacityDoc();
  let before = "";
  try {
    before = readFileSync(path, "utf8");
  } catch {
    // first run: no document yet
  }
  if (text !== before) writeFileSync(path, text);
  process.stdout.write(`${CAPACITY_DOC}: ${text === before ? "unchanged" : "rewritten"}\n`);
}
