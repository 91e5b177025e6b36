export { type CacheMonitorConfig, cacheMonitorConfigSchema, loadCacheMonitorConfig } from "./config";
export { type RunningCacheMonitor, startCacheMonitor } from "./service";
