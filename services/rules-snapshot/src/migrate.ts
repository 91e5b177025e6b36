// The migrations Job's entry point (dist/migrate.js in the image): applies this service's pending
// migrations and exits, so replicas can start with DATABASE_MIGRATIONS=verify and run no DDL.
import { runMigrationsMain } from "@prefix-guard/runtime";
import { loadRulesSnapshotConfig } from "./config";
import { rulesSnapshotSchemaMigrations } from "./service";

await runMigrationsMain("rules-snapshot", loadRulesSnapshotConfig(), rulesSnapshotSchemaMigrations);
