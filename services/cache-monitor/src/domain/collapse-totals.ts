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

export interface CauseTotal {
  readonly causeCode: string;
  readonly collapses: number;
  readonly extraCost: number;
}

/** A collapse stored before cause codes existed has none; it is counted as what it is, not known. */
export const LEGACY_CAUSE_CODE = "unknown";

/** The same order as the section totals. */
export function sortCauseTotals(totals: readonly CauseTotal[]): CauseTotal[] {
  return [...totals].sort(
    (a, b) =>
      b.collapses - a.collapses ||
      b.extraCost - a.extraCost ||
      (a.causeCode < b.causeCode ? -1 : a.causeCode > b.causeCode ? 1 : 0),
  );
}
