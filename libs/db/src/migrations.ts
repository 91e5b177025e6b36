import type { Knex } from "knex";
import { serverLockName } from "./server-lock-name";

export interface Migration {
  /** Sortable, unique within a service, e.g. "0001_session_event". Never rename a released one. */
  readonly name: string;
  up(db: Knex): Promise<void>;
  down(db: Knex): Promise<void>;
}

/** How long a replica waits for another replica's migrations before its start fails. */
export const defaultMigrationLockWaitSeconds = 120;

function migrationSource(migrations: readonly Migration[]): Knex.MigrationSource<Migration> {
  const names = migrationsInOrder(migrations);
  if (new Set(names).size !== names.length) throw new Error(`duplicate migration names: ${names.join(", ")}`);
  return {
    getMigrations: async () => [...migrations],
    getMigrationName: (migration) => migration.name,
    getMigration: async (migration) => ({ up: migration.up, down: migration.down }),
  };
}

/**
 * Runs a service's migrations from an in-code list rather than a directory scan: the same list works
 * under tsx, vitest and a bundled build, and a missing file is a compile error instead of a skipped step.
 *
 * Replicas starting together on one MySQL/MariaDB database take turns: knex's own lock row makes a
 * second migrator fail ("Migration table is already locked") instead of waiting, so a server-wide
 * GET_LOCK is held around the whole run. The first replica applies what is pending; the others then
 * find nothing to do. SQLite is one process's file, so it needs no lock.
 */
export async function runMigrations(
  db: Knex,
  migrations: readonly Migration[],
  tableName = "knex_migrations",
  lockWaitSeconds = defaultMigrationLockWaitSeconds,
): Promise<string[]> {
  const migrationSourceOf = migrationSource(migrations);
  const latest = async () => {
    const [, applied] = (await db.migrate.latest({ migrationSource: migrationSourceOf, tableName })) as [
      number,
      string[],
    ];
    return applied;
  };
  if (db.client.config.client !== "mysql2") return latest();
  return withServerLock(db, migrationLockName(db, tableName), lockWaitSeconds, latest);
}

/**
 * The names of migrations not applied yet, in order. Reads knex's table directly: knex's own listing
 * creates its tables when they are missing, and this must run no DDL at all.
 */
export async function pendingMigrations(
  db: Knex,
  migrations: readonly Migration[],
  tableName = "knex_migrations",
): Promise<string[]> {
  const names = migrationsInOrder(migrations);
  if (!(await db.schema.hasTable(tableName))) return names;
  const applied = new Set((await db(tableName).select("name")).map((row: { name: string }) => row.name));
  return names.filter((name) => !applied.has(name));
}

function migrationsInOrder(migrations: readonly Migration[]): string[] {
  return migrations.map((migration) => migration.name);
}

/** GET_LOCK names are server-wide: the database name keeps deployments apart (server-lock-name.ts). */
function migrationLockName(db: Knex, tableName: string): string {
  const database = String((db.client.config.connection as { database?: string } | undefined)?.database ?? "");
  return serverLockName(`prefix-guard:migrate:${tableName}`, database);
}

/** Runs `work` while this connection holds the named lock; the server frees it if the process dies. */
async function withServerLock<T>(db: Knex, name: string, waitSeconds: number, work: () => Promise<T>): Promise<T> {
  const connection = await db.client.acquireConnection();
  try {
    const [rows] = (await db.raw("SELECT GET_LOCK(?, ?) AS got", [name, waitSeconds]).connection(connection)) as [
      Array<{ got: number | null }>,
    ];
    if (rows[0]?.got !== 1)
      throw new Error(`migrations: another process held the lock ${name} for more than ${waitSeconds} s`);
    try {
      return await work();
    } finally {
      await db.raw("SELECT RELEASE_LOCK(?)", [name]).connection(connection);
    }
  } finally {
    await db.client.releaseConnection(connection);
  }
}
