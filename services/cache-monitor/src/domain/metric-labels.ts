// What cache-monitor's metrics are labelled with. Prometheus keeps one series per label value, so
// every label here comes from a closed set: model names (open-ended: dated snapshots, fine-tunes,
// route prefixes) are reduced to a family. Collapses are labelled by their cause code's kind
// (cause-taxonomy.ts: section_changed, tools_changed, ...), the section key going to the section label.

import { BUILTIN_CATALOGUE, catalogueEntryFor } from "./price-catalogue";
import type { PriceBook } from "./pricing";

/** The family label of a model no catalogue entry and no configured price names. */
export const OTHER_MODEL_FAMILY = "other";

/**
 * A model's family: the built-in catalogue's family it belongs to (`gpt-4o-2024-08-06` → `gpt-4o`),
 * else the exact model when the operator priced it in PRICE_MODEL_OVERRIDES (a list they bound),
 * else "other".
 */
export function modelFamilyOf(model: string, book: Pick<PriceBook, "perModel">): string {
  const entry = catalogueEntryFor(BUILTIN_CATALOGUE, model);
  if (entry !== null) return entry.family;
  return Object.hasOwn(book.perModel, model) ? model : OTHER_MODEL_FAMILY;
}
