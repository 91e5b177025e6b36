export { type CacheMonitorConfig, cacheMonitorConfigSchema, loadCacheMonitorConfig } from "./config";
// The retention advisor and the price catalogue, for the replay benchmark's write-priced costs.
export { BUILTIN_CATALOGUE, catalogueEntryFor } from "./domain/price-catalogue";
export type { PriceTable } from "./domain/price-table";
export { costOf } from "./domain/pricing";
export { RETENTIONS, type Retention } from "./domain/retention";
export {
  type AdvisedCall,
  adviseRetention,
  offeredRetentions,
  type RetentionAdvice,
  writePriceFor,
} from "./domain/retention-advisor";
export { type RunningCacheMonitor, startCacheMonitor } from "./service";
