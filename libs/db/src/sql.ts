// Plain SQL on one of the pool's own connections, for the statements every build or write runs.
// knex's query builder and runner cost about 0.3-0.4 ms of CPU per statement (compiling, the
// runner's promise chain, pool bookkeeping) against about 0.1 ms for the driver alone, which on
// the hot paths was most of a build's database cost. Everything else keeps using knex.
//
// The statements passed here are written for both dialects; upsertStatement writes the one place
// where they differ. Values are bound by the driver (mysql2 escapes them client-side, SQLite binds
// them), never concatenated into the text.

import type { Knex } from "knex";

export type SqlDialect = "mysql" | "sqlite";

export interface Sql {
  readonly dialect: SqlDialect;
  /** Rows of a SELECT. */
  rows<T extends object>(statement: string, values?: readonly unknown[]): Promise<T[]>;
  /** A statement that changes rows; how many it changed. */
  run(statement: string, values?: readonly unknown[]): Promise<{ affectedRows: number }>;
  /**
   * Several statements in order, sent in one round trip where the connection allows it (MySQL
   * with multipleStatements, see DatabaseOptions); each result is rows (a SELECT) or a change count.
   */
  batch(statements: readonly Statement[]): Promise<Array<unknown[] | { affectedRows: number }>>;
}

export interface Statement {
  readonly sql: string;
  readonly values?: readonly unknown[];
}

/** The dialect of a knex instance, transaction or query builder. */
export function dialectOf(db: Pick<Knex, "client">): SqlDialect {
  return db.client.config.client === "mysql2" ? "mysql" : "sqlite";
}

interface MysqlConnection {
  query(statement: string, values: unknown[], callback: (error: Error | null, result: unknown) => void): void;
}

interface SqliteConnection {
  prepare(statement: string): {
    readonly reader: boolean;
    all(...values: unknown[]): unknown[];
    run(...values: unknown[]): { changes: number };
  };
}

type SqliteStatement = ReturnType<SqliteConnection["prepare"]>;
const preparedStatements = new WeakMap<SqliteConnection, Map<string, SqliteStatement>>();
const MAX_PREPARED_PER_CONNECTION = 512;

function sqliteValue(value: unknown): unknown {
  if (typeof value === "boolean") return value ? 1 : 0;
  return value;
}

function sqlOn(dialect: SqlDialect, connection: unknown, multipleStatements: boolean): Sql {
  if (dialect === "mysql") {
    const mysql = connection as MysqlConnection;
    const query = (statement: string, values: readonly unknown[] = []) =>
      new Promise<unknown>((resolve, reject) => {
        mysql.query(statement, [...values], (error, result) => (error ? reject(error) : resolve(result)));
      });
    const changes = (result: unknown) =>
      Array.isArray(result)
        ? (result as unknown[])
        : { affectedRows: (result as { affectedRows?: number }).affectedRows ?? 0 };
    const single: Sql = {
      dialect,
      rows: async <T extends object>(statement: string, values?: readonly unknown[]) =>
        (await query(statement, values)) as T[],
      run: async (statement, values) => changes(await query(statement, values)) as { affectedRows: number },
      batch: async (statements) => {
        if (!multipleStatements || statements.length < 2) {
          const results: Array<unknown[] | { affectedRows: number }> = [];
          for (const statement of statements) results.push(changes(await query(statement.sql, statement.values)));
          return results;
        }
        const results = (await query(
          statements.map((statement) => statement.sql).join(";\n"),
          statements.flatMap((statement) => statement.values ?? []),
        )) as unknown[];
        return results.map(changes);
      },
    };
    return single;
  }
  const native = connection as SqliteConnection;
  const prepare = (statement: string) => {
    let cache = preparedStatements.get(native);
    if (cache === undefined) {
      cache = new Map();
      preparedStatements.set(native, cache);
    }
    let prepared = cache.get(statement);
    if (prepared === undefined) {
      prepared = native.prepare(statement);
      // Statement texts repeat (they differ only in how many rows they carry); the bound keeps an
      // unusual mix from growing the cache without limit.
      if (cache.size >= MAX_PREPARED_PER_CONNECTION) cache.clear();
      cache.set(statement, prepared);
    }
    return prepared;
  };
  const sqlite: Sql = {
    dialect,
    rows: async <T extends object>(statement: string, values: readonly unknown[] = []) =>
      prepare(statement).all(...values.map(sqliteValue)) as T[],
    run: async (statement, values = []) => ({
      affectedRows: prepare(statement).run(...values.map(sqliteValue)).changes,
    }),
    // In process: nothing to save by sending statements together.
    batch: async (statements) =>
      statements.map((statement) => {
        const prepared = prepare(statement.sql);
        const values = (statement.values ?? []).map(sqliteValue);
        return prepared.reader ? prepared.all(...values) : { affectedRows: prepared.run(...values).changes };
      }),
  };
  return sqlite;
}

/** Runs `work` on one pooled connection, released afterwards whatever happens. */
export async function withSql<T>(db: Knex, work: (sql: Sql) => Promise<T>): Promise<T> {
  const connection: unknown = await db.client.acquireConnection();
  try {
    const config = db.client.config.connection as { multipleStatements?: boolean } | undefined;
    return await work(sqlOn(dialectOf(db), connection, config?.multipleStatements === true));
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/**
 * Runs `work` in a transaction on one pooled connection: committed when it resolves, rolled back
 * when it throws. Only `sql` may be used inside (on SQLite the pool has a single connection).
 */
export async function inSqlTransaction<T>(db: Knex, work: (sql: Sql) => Promise<T>): Promise<T> {
  return withSql(db, async (sql) => {
    await sql.run(sql.dialect === "mysql" ? "START TRANSACTION" : "BEGIN IMMEDIATE");
    let result: T;
    try {
      result = await work(sql);
    } catch (error) {
      await sql.run("ROLLBACK").catch(() => undefined);
      throw error;
    }
    await sql.run("COMMIT");
    return result;
  });
}

/** "(?, ?, ?), (?, ?, ?)" for `rows` rows of `columns` values each. */
export function valueRows(rows: number, columns: number): string {
  const row = `(${Array.from({ length: columns }, () => "?").join(", ")})`;
  return Array.from({ length: rows }, () => row).join(", ");
}

/** "?, ?, ?" for a list of `count` values (an IN list). */
export function valueList(count: number): string {
  return Array.from({ length: count }, () => "?").join(", ");
}

/**
 * INSERT of `rows` rows that updates `update` columns of rows whose `conflict` key exists:
 * ON DUPLICATE KEY UPDATE on MySQL, ON CONFLICT … DO UPDATE on SQLite.
 */
export function upsertStatement(
  dialect: SqlDialect,
  table: string,
  columns: readonly string[],
  conflict: readonly string[],
  update: readonly string[],
  rows: number,
): string {
  const insert = `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${valueRows(rows, columns.length)}`;
  if (dialect === "mysql") {
    return `${insert} ON DUPLICATE KEY UPDATE ${update.map((column) => `${column} = VALUES(${column})`).join(", ")}`;
  }
  return `${insert} ON CONFLICT (${conflict.join(", ")}) DO UPDATE SET ${update
    .map((column) => `${column} = excluded.${column}`)
    .join(", ")}`;
}

/** " FOR UPDATE" on MySQL (row locks until commit); SQLite has one writer at a time anyway. */
export function forUpdate(dialect: SqlDialect): string {
  return dialect === "mysql" ? " FOR UPDATE" : "";
}

/**
 * forUpdate for the query builder: `query` with FOR UPDATE on MySQL (row locks until commit),
 * unchanged on SQLite (one writer at a time anyway, and knex warns on FOR UPDATE there).
 */
export function lockForUpdate<Query extends Knex.QueryBuilder>(query: Query): Query {
  return dialectOf(query) === "mysql" ? (query.forUpdate() as Query) : query;
}
