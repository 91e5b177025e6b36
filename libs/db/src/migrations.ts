import type { Knex } from "knex";

export interface Migration {
  /** Sortable, unique within a service, e.g. "0001_session_event". Never rename a released one. */
  readonly name: string;
  up(db: Knex): Promise<void>;
  down(db: Knex): Promise<void>;
}

/**
 * Runs a service's migrations from an in-code list rather than a directory scan: the same list works
 * under tsx, vitest and a bundled build, and a missing file is a compile error instead of a skipped step.
 */
export async function runMigrations(
  db: Knex,
  migrations: readonly Migration[],
  tableName = "knex_migrations",
): Promise<string[]> {
  const names = migrations.map((m) => m.name);
  if (new Set(names).size !== names.length) throw new Error(`duplicate migration names: ${names.join(", ")}`);
  const source: Knex.MigrationSource<Migration> = {
    getMigrations: async () => [...migrations],
    getMigrationName: (migration) => migration.name,
    getMigration: async (migration) => ({ up: migration.up, down: migration.down }),
  };
  const [, applied] = (await db.migrate.latest({ migrationSource: source, tableName })) as [number, string[]];
  return applied;
}
