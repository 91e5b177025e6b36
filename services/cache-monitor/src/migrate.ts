// The migrations Job's entry point (dist/migrate.js in the image): applies this service's pending
// migrations and exits, so replicas can start with DATABASE_MIGRATIONS=verify and run no DDL.

import { cacheMonitorMigrations } from "@prefix-guard/migrations/cache-monitor";
import { runMigrationsMain } from "@prefix-guard/runtime";
import { loadCacheMonitorConfig } from "./config";

await runMigrationsMain("cache-monitor", loadCacheMonitorConfig(), cacheMonitorMigrations);
