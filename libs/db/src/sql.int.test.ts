import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabase, type Database } from "./database";
import { dialectOf, inSqlTransaction, lockForUpdate, upsertStatement, valueList, withSql } from "./sql";
import { createTestDatabase, type TestDatabase } from "./testing";

interface Target {
  readonly name: string;
  open(): Promise<{ db: Database; close(): Promise<void> }>;
}

const targets: Target[] = [
  {
    name: "MariaDB, one statement per query",
    async open() {
      const test: TestDatabase = await createTestDatabase("sql_single");
      return { db: test.db, close: () => test.drop() };
    },
  },
  {
    name: "MariaDB, several statements per query",
    async open() {
      const test: TestDatabase = await createTestDatabase("sql_multi");
      const db = createDatabase(test.url, { multipleStatements: true });
      return {
        db,
        close: async () => {
          await db.destroy();
          await test.drop();
        },
      };
    },
  },
  {
    name: "SQLite",
    async open() {
      const dir = await mkdtemp(join(tmpdir(), "pg-sql-"));
      const db = createDatabase(`sqlite:${join(dir, "t.sqlite")}`);
      return {
        db,
        close: async () => {
          await db.destroy();
          await rm(dir, { recursive: true, force: true });
        },
      };
    },
  },
];

describe.each(targets)("plain SQL on $name", (target) => {
  let db: Database;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ db, close } = await target.open());
    await db.schema.createTable("kv", (t) => {
      t.string("k", 20).primary();
      t.text("v").notNullable();
      t.boolean("flag").notNullable();
    });
  });
  afterAll(async () => close());

  it("upserts rows, reads them back with bound values, and counts changes", async () => {
    const rows = await withSql(db, async (sql) => {
      const first = await sql.run(upsertStatement(sql.dialect, "kv", ["k", "v", "flag"], ["k"], ["v", "flag"], 2), [
        "a",
        "1",
        true,
        "b",
        'it\'s "quoted"; DROP TABLE kv',
        false,
      ]);
      expect(first.affectedRows).toBeGreaterThanOrEqual(2);
      await sql.run(upsertStatement(sql.dialect, "kv", ["k", "v", "flag"], ["k"], ["v", "flag"], 1), ["a", "2", false]);
      return sql.rows<{ k: string; v: string; flag: number | boolean }>(
        `SELECT k, v, flag FROM kv WHERE k IN (${valueList(2)}) ORDER BY k`,
        ["a", "b"],
      );
    });
    expect(rows.map((row) => [row.k, row.v, Number(row.flag)])).toEqual([
      ["a", "2", 0],
      ["b", 'it\'s "quoted"; DROP TABLE kv', 0],
    ]);
  });

  it("sends a batch and answers each statement's rows or change count, in order", async () => {
    const results = await withSql(db, (sql) =>
      sql.batch([
        { sql: "DELETE FROM kv WHERE k = ?", values: ["zz"] },
        { sql: "SELECT COUNT(*) AS n FROM kv" },
        { sql: "UPDATE kv SET v = ? WHERE k = ?", values: ["3", "a"] },
        { sql: "SELECT v FROM kv WHERE k = ?", values: ["a"] },
      ]),
    );
    expect(results[0]).toEqual({ affectedRows: 0 });
    expect(Number((results[1] as Array<{ n: number }>)[0]?.n)).toBe(2);
    expect(results[2]).toEqual({ affectedRows: 1 });
    expect(results[3]).toEqual([{ v: "3" }]);
  });

  it("commits a transaction that resolves and rolls back one that throws", async () => {
    await inSqlTransaction(db, (sql) => sql.run("UPDATE kv SET v = ? WHERE k = ?", ["committed", "a"]));
    await expect(
      inSqlTransaction(db, async (sql) => {
        await sql.run("UPDATE kv SET v = ? WHERE k = ?", ["lost", "a"]);
        throw new Error("after the write");
      }),
    ).rejects.toThrow("after the write");
    expect(await db("kv").where({ k: "a" }).first("v")).toEqual({ v: "committed" });
  });

  it("lockForUpdate: the query builder's rows stay locked until commit on MySQL; SQLite reads them as they are", async () => {
    await db("kv").insert({ k: "locked", v: "x", flag: false });
    const mysql = dialectOf(db) === "mysql";
    await db.transaction(async (trx) => {
      const query = lockForUpdate(trx("kv").where({ k: "locked" }).first("v"));
      expect(query.toSQL().sql.toLowerCase().includes("for update")).toBe(mysql);
      expect(await query).toEqual({ v: "x" });
      if (mysql) {
        // Another connection cannot lock the row while this transaction holds it (NOWAIT: no waiting).
        await expect(
          db.transaction((other) => other("kv").where({ k: "locked" }).first("v").forUpdate().noWait()),
        ).rejects.toThrow(/lock/i);
      }
    });
    if (mysql) {
      await db.transaction(async (other) => {
        expect(await other("kv").where({ k: "locked" }).first("v").forUpdate().noWait()).toEqual({ v: "x" });
      });
    }
  });
});
