import { randomBytes } from "node:crypto";
import knexFactory from "knex";
import { createDatabase, type Database } from "./database";

/** The MariaDB server tests use; CI and local machines run it on loopback. */
const testMysqlServerUrl = process.env.TEST_MYSQL_URL ?? "mysql://root@127.0.0.1:3306";

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  readonly db: Database;
  drop(): Promise<void>;
}

/**
 * Creates a uniquely named MariaDB database for one test file and drops it afterwards; on the shared
 * test server unless a test runs a server of its own (`serverUrl`, e.g. one it restarts).
 */
export async function createTestDatabase(label: string, serverUrl = testMysqlServerUrl): Promise<TestDatabase> {
  const name = `pg_${label.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 30)}_${randomBytes(4).toString("hex")}`;
  const server = new URL(serverUrl);
  const admin = knexFactory({
    client: "mysql2",
    connection: {
      host: server.hostname,
      port: Number(server.port || 3306),
      user: decodeURIComponent(server.username || "root"),
      password: decodeURIComponent(server.password),
      connectTimeout: 5_000,
    },
    pool: { min: 0, max: 1 },
  });
  try {
    await admin.raw(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  } finally {
    await admin.destroy();
  }
  const url = `${serverUrl.replace(/\/$/, "")}/${name}`;
  const db = createDatabase(url);
  return {
    url,
    name,
    db,
    async drop() {
      await db.destroy();
      const cleanup = knexFactory({
        client: "mysql2",
        connection: {
          host: server.hostname,
          port: Number(server.port || 3306),
          user: decodeURIComponent(server.username || "root"),
          password: decodeURIComponent(server.password),
        },
        pool: { min: 0, max: 1 },
      });
      try {
        await cleanup.raw(`DROP DATABASE IF EXISTS \`${name}\``);
      } finally {
        await cleanup.destroy();
      }
    },
  };
}

/** An in-memory SQLite database for unit-speed tests of SQL adapters. */
export function createMemoryDatabase(): Database {
  return createDatabase("sqlite::memory:");
}
