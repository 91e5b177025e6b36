// ListCollapses' per-section summary, the shape of seed 001 §1.1's "146 alerts, 110 workspace-rules":
// a collapse that changed several sections counts once for each (the store groups its section rows),
// so section counts may add up to more than the number of collapses.

export interface SectionTotal {
  readonly section: string;
  readonly collapses: number;
  readonly extraCost: number;
}

/** Most collapses first, then most extra cost, then name, so the answer to "what hurts most" leads. */
export function sortSectionTotals(totals: readonly SectionTotal[]): SectionTotal[] {
  return [...totals].sort(
    (a, b) =>
      b.collapses - a.collapses ||
      b.extraCost - a.extraCost ||
      (a.section < b.section ? -1 : a.section > b.section ? 1 : 0),
  );
}
