// The migrations Job's entry point (dist/migrate.js in the image): applies this service's pending
// migrations and exits, so replicas can start with DATABASE_MIGRATIONS=verify and run no DDL.

import { promptAssemblyMigrations } from "@prefix-guard/migrations/prompt-assembly";
import { runMigrationsMain } from "@prefix-guard/runtime";
import { loadPromptAssemblyConfig } from "./config";

await runMigrationsMain("prompt-assembly", loadPromptAssemblyConfig(), promptAssemblyMigrations);
