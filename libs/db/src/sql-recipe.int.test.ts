// CONTRIBUTING.md's "Raw SQL or query builder" recipe, followed for a toy store: the port as a
// service's application/ports.ts would declare it, one migration for both dialects, the store
// written with knex's query builder and again with libs/db's plain statements, and the
// application's side (retryOnDeadlock around the whole port call). Both stores must leave the same
// rows on MariaDB and on SQLite, and lose no update when they write the same rows at once.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UnavailableError } from "@prefix-guard/errors";
import type { Knex } from "knex";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createDatabase,
  type Database,
  dialectOf,
  ensureRowsExist,
  forUpdate,
  inSqlTransaction,
  isLockFailure,
  lockForUpdate,
  type Migration,
  retryOnDeadlock,
  runMigrations,
  type SqlDialect,
  translateDbError,
  valueList,
  valueRows,
  withSql,
} from "./index";
import { createTestDatabase } from "./testing";

// The port: named tallies, every add logged. No knex, driver or SQL in its shapes.
interface TallyStore {
  /** Adds `by` to each named tally (created at 0 when missing) and logs each add, in one transaction. */
  add(names: readonly string[], by: number, nowMs: number): Promise<void>;
  /** Each named tally's total; a tally never added to is absent. */
  totals(names: readonly string[]): Promise<Map<string, number>>;
}

// Step 1: the migration, in what both dialects have (BIGINT ms instants, no defaults, no foreign keys).
const tallyTables: Migration = {
  name: "0001_tally",
  async up(db) {
    await db.schema.createTable("tally", (t) => {
      t.string("name", 64).notNullable().primary();
      t.bigInteger("total").notNullable();
      t.bigInteger("updated_at_ms").notNullable();
    });
    await db.schema.createTable("tally_log", (t) => {
      t.increments("id");
      t.string("name", 64).notNullable();
      t.bigInteger("delta").notNullable();
      t.bigInteger("at_ms").notNullable();
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("tally_log");
    await db.schema.dropTableIfExists("tally");
  },
};

interface TallyRow {
  readonly name: string;
  readonly total: number | string;
}

/** Step 3 for both stores: rows in key order, created before the transaction that locks them. */
async function lockableRows(db: Database, names: readonly string[], nowMs: number): Promise<string[]> {
  const sorted = [...new Set(names)].sort();
  await ensureRowsExist(
    db,
    "tally",
    ["name"],
    sorted.map((name) => ({ name, total: 0, updated_at_ms: nowMs })),
  );
  return sorted;
}

// Step 2, the default: knex's query builder, rows locked with lockForUpdate.
class BuilderTallyStore implements TallyStore {
  constructor(private readonly db: Database) {}

  async add(names: readonly string[], by: number, nowMs: number): Promise<void> {
    try {
      const sorted = await lockableRows(this.db, names, nowMs);
      await this.db.transaction(async (trx) => {
        const rows: TallyRow[] = await lockForUpdate(
          trx("tally").whereIn("name", sorted).orderBy("name").select("name", "total"),
        );
        for (const row of rows) {
          await trx("tally")
            .where({ name: row.name })
            .update({ total: Number(row.total) + by, updated_at_ms: nowMs });
        }
        await trx("tally_log").insert(sorted.map((name) => ({ name, delta: by, at_ms: nowMs })));
      });
    } catch (error) {
      // Step 4: typed errors leave the adapter.
      throw translateDbError(error);
    }
  }

  async totals(names: readonly string[]): Promise<Map<string, number>> {
    const rows: TallyRow[] = await this.db("tally")
      .whereIn("name", [...names])
      .select("name", "total");
    return new Map(rows.map((row) => [row.name, Number(row.total)]));
  }
}

// Step 2, the hot path: libs/db's plain statements, the locking SELECT ending in forUpdate(dialect).
class PlainTallyStore implements TallyStore {
  constructor(private readonly db: Database) {}

  async add(names: readonly string[], by: number, nowMs: number): Promise<void> {
    try {
      const sorted = await lockableRows(this.db, names, nowMs);
      await inSqlTransaction(this.db, async (sql) => {
        const rows = await sql.rows<TallyRow>(
          `SELECT name, total FROM tally WHERE name IN (${valueList(sorted.length)}) ORDER BY name${forUpdate(sql.dialect)}`,
          sorted,
        );
        await sql.batch([
          ...rows.map((row) => ({
            sql: "UPDATE tally SET total = ?, updated_at_ms = ? WHERE name = ?",
            values: [Number(row.total) + by, nowMs, row.name],
          })),
          {
            sql: `INSERT INTO tally_log (name, delta, at_ms) VALUES ${valueRows(sorted.length, 3)}`,
            values: sorted.flatMap((name) => [name, by, nowMs]),
          },
        ]);
      });
    } catch (error) {
      throw translateDbError(error);
    }
  }

  async totals(names: readonly string[]): Promise<Map<string, number>> {
    const rows = await withSql(this.db, (sql) =>
      sql.rows<TallyRow>(`SELECT name, total FROM tally WHERE name IN (${valueList(names.length)})`, names),
    );
    return new Map(rows.map((row) => [row.name, Number(row.total)]));
  }
}

interface Target {
  readonly name: string;
  readonly dialect: SqlDialect;
  open(): Promise<{ db: Database; close(): Promise<void> }>;
}

const targets: Target[] = [
  {
    name: "MariaDB",
    dialect: "mysql",
    async open() {
      const test = await createTestDatabase("sql_recipe");
      // As a service whose store batches statements opens it (ServiceKit's database options).
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
    dialect: "sqlite",
    async open() {
      const dir = await mkdtemp(join(tmpdir(), "pg-sql-recipe-"));
      const db = createDatabase(`sqlite:${join(dir, "recipe.sqlite")}`);
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

/** Everything both tables hold, in a form that does not depend on the dialect's number types. */
async function tables(db: Knex): Promise<{ tally: unknown[]; log: unknown[] }> {
  const tally = (await db("tally").orderBy("name").select("name", "total", "updated_at_ms")) as Array<
    Record<string, number | string>
  >;
  const log = (await db("tally_log").orderBy("id").select("name", "delta", "at_ms")) as Array<
    Record<string, number | string>
  >;
  return {
    tally: tally.map((row) => [row.name, Number(row.total), Number(row.updated_at_ms)]),
    log: log.map((row) => [row.name, Number(row.delta), Number(row.at_ms)]),
  };
}

/** Resolves once `parties` callers have arrived; later callers pass straight through. */
function barrier(parties: number): () => Promise<void> {
  let arrived = 0;
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return () => {
    arrived += 1;
    if (arrived >= parties) open();
    return opened;
  };
}

describe.each(targets)("the raw SQL or query builder recipe on $name", (target) => {
  let db: Database;
  let close: () => Promise<void>;
  let stores: { builder: TallyStore; plain: TallyStore };
  beforeAll(async () => {
    ({ db, close } = await target.open());
    expect(await runMigrations(db, [tallyTables])).toEqual(["0001_tally"]);
    stores = { builder: new BuilderTallyStore(db), plain: new PlainTallyStore(db) };
  });
  afterAll(async () => close());

  async function emptyTables(): Promise<void> {
    await db("tally_log").delete();
    await db("tally").delete();
  }

  it("appends FOR UPDATE on MySQL only: forUpdate(dialect) to plain statements, lockForUpdate to the builder's", () => {
    expect(dialectOf(db)).toBe(target.dialect);
    expect(forUpdate(dialectOf(db))).toBe(target.dialect === "mysql" ? " FOR UPDATE" : "");
    const locking = lockForUpdate(db("tally").where({ name: "a" }).select("total")).toSQL().sql;
    expect(/ for update$/i.test(locking)).toBe(target.dialect === "mysql");
  });

  it("leaves the same rows whichever way the store is written", async () => {
    const written: Record<string, unknown> = {};
    for (const [way, store] of Object.entries(stores)) {
      await emptyTables();
      await store.add(["b", "a"], 2, 1_000);
      await store.add(["a"], 3, 2_000);
      await store.add(["c", "a", "c"], 1, 3_000);
      expect(await store.totals(["a", "b", "c", "d"])).toEqual(
        new Map([
          ["a", 6],
          ["b", 2],
          ["c", 1],
        ]),
      );
      written[way] = await tables(db);
    }
    expect(written.plain).toEqual(written.builder);
    expect(written.builder).toEqual({
      tally: [
        ["a", 6, 3_000],
        ["b", 2, 1_000],
        ["c", 1, 3_000],
      ],
      log: [
        ["a", 2, 1_000],
        ["b", 2, 1_000],
        ["a", 3, 2_000],
        ["a", 1, 3_000],
        ["c", 1, 3_000],
      ],
    });
  });

  it("loses no update when both stores add to the same tallies at once", async () => {
    await emptyTables();
    const writers = [stores.builder, stores.plain];
    await Promise.all(
      Array.from({ length: 12 }, (_, index) => {
        const store = writers[index % 2] as TallyStore;
        const names = index % 3 === 0 ? ["a", "b"] : ["c", "b", "a"];
        // The application's side of step 4: the whole port call is rerun after a deadlock.
        return retryOnDeadlock(() => store.add(names, 1, 10_000 + index));
      }),
    );
    expect(await stores.plain.totals(["a", "b", "c"])).toEqual(
      new Map([
        ["a", 12],
        ["b", 12],
        ["c", 8],
      ]),
    );
    expect((await tables(db)).log).toHaveLength(4 * 2 + 8 * 3);
  });

  it("reruns a deadlock victim with retryOnDeadlock, through translateDbError's typed error", async (context) => {
    if (target.dialect !== "mysql") context.skip(); // SQLite has one writer at a time: nothing to deadlock.
    await emptyTables();
    await ensureRowsExist(
      db,
      "tally",
      ["name"],
      [
        { name: "a", total: 0, updated_at_ms: 0 },
        { name: "b", total: 0, updated_at_ms: 0 },
      ],
    );
    // Rows locked in opposite orders, each transaction holding its first row before asking for the other.
    const crossing = (arrived: () => Promise<void>, attempts: { count: number }) => async (first: string) => {
      attempts.count += 1;
      const second = first === "a" ? "b" : "a";
      try {
        await db.transaction(async (trx) => {
          await lockForUpdate(trx("tally").where({ name: first }).first("total"));
          await arrived();
          await lockForUpdate(trx("tally").where({ name: second }).first("total"));
          await trx("tally").whereIn("name", [first, second]).increment("total", 1);
        });
      } catch (error) {
        throw translateDbError(error);
      }
    };

    const once = { count: 0 };
    const unretried = crossing(barrier(2), once);
    const outcomes = await Promise.allSettled([unretried("a"), unretried("b")]);
    const failures = outcomes.flatMap((outcome) => (outcome.status === "rejected" ? [outcome.reason] : []));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toBeInstanceOf(UnavailableError);
    expect(isLockFailure((failures[0] as Error).cause)).toBe(true);

    const retried = { count: 0 };
    const rerun = crossing(barrier(2), retried);
    await Promise.all([retryOnDeadlock(() => rerun("a")), retryOnDeadlock(() => rerun("b"))]);
    expect(retried.count).toBe(3);
    // One transaction of the first pair, both of the second.
    expect(await stores.builder.totals(["a", "b"])).toEqual(
      new Map([
        ["a", 3],
        ["b", 3],
      ]),
    );
  });
});
