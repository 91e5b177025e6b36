import { runServiceMain } from "@prefix-guard/runtime";
import { loadCacheMonitorConfig } from "./config";
import { startCacheMonitor } from "./service";

await runServiceMain("cache-monitor", loadCacheMonitorConfig(), startCacheMonitor);
