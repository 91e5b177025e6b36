// What cache-monitor's metrics are labelled with. Prometheus keeps one series per label value, so
// every label here comes from a closed set: model names (open-ended: dated snapshots, fine-tunes,
// route prefixes) are reduced to a family. Collapses are labelled by their cause code's kind
// (cause-taxonomy.ts: section_changed, tools_changed, ...), the section key going to the section label.

import type { TrafficSource } from "./model";
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

/** The section label of a gateway block that names none of the bounded ones (never a raw key). */
export const OTHER_BLOCK_SECTION = "other";

const GATEWAY_BLOCK_KEY = /^(system|messages)\[\d+\]$/;
/** What a collapse with no named section is counted under (attribution.ts sectionsOfCollapse). */
const COLLAPSE_GROUPS = new Set(["(none)", "(unknown)", "(tools)", "(history)"]);

/**
 * A collapse's section as a label. Our builds' section keys are the sections prompt-assembly
 * assembles (a closed list) and pass as they are; a gateway block key carries an index a request
 * chooses ("system[0]", "messages[3]"), so it is reduced to its kind ("system", "messages"). The
 * "(tools)" / "(history)" / "(none)" / "(unknown)" groups pass; anything else from the gateway is
 * "other".
 */
export function sectionLabelOf(section: string, source: TrafficSource): string {
  if (source !== "gateway" || COLLAPSE_GROUPS.has(section)) return section;
  const block = GATEWAY_BLOCK_KEY.exec(section);
  if (block !== null) return block[1] as string;
  return section === "tools" ? "tools" : OTHER_BLOCK_SECTION;
}
