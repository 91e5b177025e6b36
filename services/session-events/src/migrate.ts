// The migrations Job's entry point (dist/migrate.js in the image): applies this service's pending
// migrations and exits, so replicas can start with DATABASE_MIGRATIONS=verify and run no DDL.

import { sessionEventsMigrations } from "@prefix-guard/migrations/session-events";
import { runMigrationsMain } from "@prefix-guard/runtime";
import { loadSessionEventsConfig } from "./config";

await runMigrationsMain("session-events", loadSessionEventsConfig(), sessionEventsMigrations);
