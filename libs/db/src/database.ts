import { ValidationError } from "@prefix-guard/errors";
import knexFactory, { type Knex } from "knex";

export type Database = Knex;

export type DatabaseTarget =
  | {
      readonly dialect: "mysql";
      readonly host: string;
      readonly port: number;
      readonly user: string;
      readonly password: string;
      readonly database: string;
    }
  | { readonly dialect: "sqlite"; readonly filename: string };

export interface DatabaseOptions {
  /** Upper bound on waiting for a pooled connection; a DB outage must surface as an error, not a hang. */
  readonly acquireTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  readonly poolMax?: number;
  /**
   * MySQL: let one query carry several statements, so a hot transaction can be sent in fewer round
   * trips (Sql.batch). Only ever used with bound values, never with text built from input.
   */
  readonly multipleStatements?: boolean;
  /**
   * SQLite: `PRAGMA secure_delete = ON`, so deleted and overwritten content is zeroed in the file
   * instead of lingering in free pages and cells (erasure must leave no readable bytes). On unless
   * set to false. Ignored on MySQL.
   */
  readonly secureDelete?: boolean;
}

/**
 * Accepts `mysql://user:pass@host:port/db`, `sqlite:relative/or/absolute/path.sqlite` and `sqlite::memory:`.
 * One URL per service keeps configuration to a single env var.
 */
export function parseDatabaseUrl(url: string, field = "DATABASE_URL"): DatabaseTarget {
  if (url.startsWith("sqlite:")) {
    const filename = url.slice("sqlite:".length).replace(/^\/\//, "");
    if (filename.length === 0) throw new ValidationError(field, "sqlite URL needs a file name or :memory:");
    return { dialect: "sqlite", filename };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ValidationError(field, `not a database URL: ${JSON.stringify(redactUrl(url))}`);
  }
  if (parsed.protocol !== "mysql:" && parsed.protocol !== "mariadb:") {
    throw new ValidationError(field, `unsupported scheme ${parsed.protocol} (use mysql:// or sqlite:)`);
  }
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ""));
  if (!/^[A-Za-z0-9_]{1,64}$/.test(database)) {
    throw new ValidationError(field, "database name must be 1-64 characters of [A-Za-z0-9_]");
  }
  return {
    dialect: "mysql",
    host: parsed.hostname || "127.0.0.1",
    port: parsed.port ? Number(parsed.port) : 3306,
    user: decodeURIComponent(parsed.username || "root"),
    password: decodeURIComponent(parsed.password),
    database,
  };
}

function redactUrl(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
}

export function describeDatabaseUrl(url: string): string {
  return redactUrl(url);
}

export function createDatabase(url: string, options: DatabaseOptions = {}): Database {
  const target = parseDatabaseUrl(url);
  const acquireConnectionTimeout = options.acquireTimeoutMs ?? 5_000;
  if (target.dialect === "sqlite") {
    const db = knexFactory({
      client: "better-sqlite3",
      connection: { filename: target.filename },
      useNullAsDefault: true,
      acquireConnectionTimeout,
      // better-sqlite3 is synchronous; one connection serialises writers the way SQLite wants.
      pool: {
        min: 1,
        max: 1,
        afterCreate: (conn: { pragma: (s: string) => unknown }, done: (err: Error | null, conn: unknown) => void) => {
          conn.pragma("journal_mode = WAL");
          conn.pragma("foreign_keys = ON");
          conn.pragma("busy_timeout = 5000");
          // Erasure: deleted rows are zeroed, not left in free pages (the embedded default's files hold
          // user content). Off only where a caller says so.
          if (options.secureDelete !== false) conn.pragma("secure_delete = ON");
          done(null, conn);
        },
      },
    });
    return db;
  }
  return knexFactory({
    client: "mysql2",
    connection: {
      host: target.host,
      port: target.port,
      user: target.user,
      password: target.password,
      database: target.database,
      connectTimeout: options.connectTimeoutMs ?? 5_000,
      // Store and read instants as UTC ms (BIGINT); never let the driver apply a local zone.
      timezone: "Z",
      supportBigNumbers: true,
      bigNumberStrings: false,
      charset: "utf8mb4",
      multipleStatements: options.multipleStatements ?? false,
    },
    acquireConnectionTimeout,
    pool: { min: 0, max: options.poolMax ?? 10 },
  });
}
