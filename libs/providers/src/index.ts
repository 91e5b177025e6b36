// @prefix-guard/providers: the provider catalogue and the retention vocabulary every service shares.

import builtinCatalogueJson from "../catalogue.json" with { type: "json" };
import { type ModelFamily, type ProviderCatalogue, parseProviderCatalogue } from "./catalogue";
import { judgedRetentionOf, RETENTION_TTL_MS, type Retention } from "./retention";

export {
  catalogueModelName,
  familyOf,
  type ModelFamily,
  mergeProviderCatalogue,
  type ProviderCatalogue,
  type ProviderEntry,
  parseProviderCatalogue,
  providerOfWireFormat,
  type UsageEntry,
} from "./catalogue";
export { DOC_TABLES, type DocTableName, renderDocTable, replaceDocTables } from "./doc-tables";
export {
  isRequestRetention,
  JUDGED_RETENTIONS,
  judgedRetention,
  judgedRetentionOf,
  REQUEST_RETENTIONS,
  RETENTION_TTL_MS,
  type RequestRetention,
  type Retention,
} from "./retention";

/** The catalogue shipped with this release (catalogue.json), checked once at module load. */
export const BUILTIN_PROVIDER_CATALOGUE: ProviderCatalogue = parseProviderCatalogue(
  builtinCatalogueJson,
  "libs/providers/catalogue.json",
);

/**
 * The retention a call left the provider's cache under: the one its build opted into, else its
 * family's default, else the 5-minute default most providers keep.
 */
export function retentionInForce(family: ModelFamily | null, optedRetention: string): Retention {
  return judgedRetentionOf(optedRetention) ?? family?.defaultRetention ?? "5m";
}

/** True when an entry written under `retention` has expired after `idleMs` without a hit. */
export function expiredAfter(idleMs: number, retention: Retention): boolean {
  return idleMs > RETENTION_TTL_MS[retention];
}
