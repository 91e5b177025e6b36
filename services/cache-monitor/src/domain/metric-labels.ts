// What cache-monitor's metrics are labelled with. Prometheus keeps one series per label value, so
// every label here comes from a closed set: model names (open-ended: dated snapshots, fine-tunes,
// route prefixes) are reduced to a family, and the collapse explanation (free text) to a cause code.

import type { CollapseExplanation } from "./call-assessment";
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

/**
 * Why a collapse happened, as a closed code: the first that applies of the provider dropping a
 * cache we did not break, the tools changing, the history being rewritten, a section changing;
 * "unknown" when nothing comparable was seen (no fingerprint, or a builder that forgot the session
 * and no section differed).
 */
export type CollapseCauseCode = "provider_only" | "tools_changed" | "history_rewritten" | "section_changed" | "unknown";

export function collapseCauseCodeOf(
  explanation: Pick<CollapseExplanation, "attribution" | "toolsChanged" | "historyRewritten" | "changedSections">,
): CollapseCauseCode {
  if (explanation.attribution === "provider_only") return "provider_only";
  if (explanation.toolsChanged) return "tools_changed";
  if (explanation.historyRewritten) return "history_rewritten";
  if (explanation.changedSections.length > 0) return "section_changed";
  return "unknown";
}
