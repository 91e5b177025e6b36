import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import {
  createDatabase,
  type Database,
  type DatabaseOptions,
  describeDatabaseUrl,
  type Migration,
  parseDatabaseUrl,
  runMigrations,
} from "@prefix-guard/db";
import type { Logger } from "@prefix-guard/logging";

/** Opens a service's database and brings its schema up to date before anything else uses it. */
export async function openServiceDatabase(
  url: string,
  migrations: readonly Migration[],
  logger: Logger,
  options: DatabaseOptions = {},
): Promise<Database> {
  const target = parseDatabaseUrl(url);
  if (target.dialect === "sqlite" && target.filename !== ":memory:")
    mkdirSync(dirname(target.filename), { recursive: true });
  const db = createDatabase(url, options);
  const applied = await runMigrations(db, migrations);
  logger.info(
    { database: describeDatabaseUrl(url), applied },
    applied.length > 0 ? "migrations applied" : "schema up to date",
  );
  return db;
}
