import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import {
  createDatabase,
  type Database,
  type DatabaseOptions,
  describeDatabaseUrl,
  type Migration,
  parseDatabaseUrl,
  pendingMigrations,
  runMigrations,
} from "@prefix-guard/db";
import type { Logger } from "@prefix-guard/logging";

/** What start-up does about the schema (DATABASE_MIGRATIONS, DATABASE_MIGRATIONS_WAIT_MS). */
export interface SchemaPolicy {
  readonly mode: "apply" | "verify";
  readonly waitMs: number;
}

export const applyMigrationsAtStart: SchemaPolicy = { mode: "apply", waitMs: 120_000 };

/** Opens a service's database and makes sure its schema is up to date before anything else uses it. */
export async function openServiceDatabase(
  url: string,
  migrations: readonly Migration[],
  logger: Logger,
  options: DatabaseOptions = {},
  schema: SchemaPolicy = applyMigrationsAtStart,
): Promise<Database> {
  const target = parseDatabaseUrl(url);
  if (target.dialect === "sqlite" && target.filename !== ":memory:")
    mkdirSync(dirname(target.filename), { recursive: true });
  const db = createDatabase(url, options);
  try {
    if (schema.mode === "verify") await awaitAppliedMigrations(db, migrations, schema.waitMs, logger, url);
    else {
      const applied = await runMigrations(db, migrations, undefined, Math.ceil(schema.waitMs / 1_000));
      logger.info(
        { database: describeDatabaseUrl(url), applied },
        applied.length > 0 ? "migrations applied" : "schema up to date",
      );
    }
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return db;
}

/** Runs no DDL: polls until every migration is applied (by the migrations Job), or fails start-up. */
async function awaitAppliedMigrations(
  db: Database,
  migrations: readonly Migration[],
  waitMs: number,
  logger: Logger,
  url: string,
): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (let pending = await pendingMigrations(db, migrations); pending.length > 0; ) {
    if (Date.now() >= deadline)
      throw new Error(
        `DATABASE_MIGRATIONS=verify: ${pending.length} migration(s) not applied after ${waitMs} ms (${pending.join(", ")}); run the migrations Job (node dist/migrate.js)`,
      );
    logger.info({ database: describeDatabaseUrl(url), pending }, "waiting for the migrations Job");
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    pending = await pendingMigrations(db, migrations);
  }
  logger.info({ database: describeDatabaseUrl(url) }, "schema up to date (verified, no DDL run)");
}
