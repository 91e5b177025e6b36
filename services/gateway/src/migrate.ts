// The migrations Job's entry point (dist/migrate.js in the image): applies the gateway's pending
// migrations (its outbox table) and exits, so replicas can start with DATABASE_MIGRATIONS=verify.

import { gatewayMigrations } from "@prefix-guard/migrations/gateway";
import { runMigrationsMain } from "@prefix-guard/runtime";
import { loadGatewayConfig } from "./config";

await runMigrationsMain("gateway", loadGatewayConfig(), gatewayMigrations);
