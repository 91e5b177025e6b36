import { ConflictError } from "@prefix-guard/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  applyInSessionOrder,
  consumerPositionTable,
  type Database,
  type Migration,
  runMigrations,
  translateDbError,
} from "./index";
import { createMemoryDatabase, createTestDatabase, type TestDatabase } from "./testing";

const widgets: Migration = {
  name: "0001_widget",
  async up(db) {
    await db.schema.createTable("widget", (t) => {
      t.string("session_id", 128).notNullable();
      t.bigInteger("seq").notNullable();
      t.text("body", "mediumtext").notNullable();
      t.unique(["session_id", "seq"]);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("widget");
  },
};

function suite(name: string, open: () => Promise<{ db: Database; close: () => Promise<void> }>) {
  describe(name, () => {
    let db: Database;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ db, close } = await open());
    });
    afterAll(async () => close());

    it("migrates once and is a no-op the second time", async () => {
      expect(await runMigrations(db, [consumerPositionTable, widgets])).toEqual([
        "0000_consumer_position",
        "0001_widget",
      ]);
      expect(await runMigrations(db, [consumerPositionTable, widgets])).toEqual([]);
      expect(await db.schema.hasTable("widget")).toBe(true);
    });

    it("maps a duplicate (session_id, seq) to ConflictError", async () => {
      await db("widget").insert({ session_id: "s1", seq: 1, body: "a" });
      const error = await db("widget")
        .insert({ session_id: "s1", seq: 1, body: "b" })
        .catch((e: unknown) => translateDbError(e));
      expect(error).toBeInstanceOf(ConflictError);
      expect(await db("widget").where({ session_id: "s1" }).count({ n: "*" })).toEqual([{ n: 1 }]);
    });

    it("applies each seq once, skips redeliveries and reports gaps without applying", async () => {
      const applied: number[] = [];
      const apply = (seq: number, applyAcrossGap = false) =>
        applyInSessionOrder(db, { consumer: "test", sessionId: "s9", seq, nowMs: 1, applyAcrossGap }, async (trx) => {
          applied.push(seq);
          await trx("widget").insert({ session_id: "s9", seq, body: `e${seq}` });
        });
      expect((await apply(1)).kind).toBe("applied");
      expect((await apply(2)).kind).toBe("applied");
      expect(await apply(2)).toEqual({ kind: "duplicate", lastSeq: 2 });
      expect(await apply(4)).toEqual({ kind: "gap", lastSeq: 2 });
      expect((await apply(4, true)).kind).toBe("applied");
      expect(applied).toEqual([1, 2, 4]);
    });

    it("rolls back the position when the projection change fails", async () => {
      const outcome = applyInSessionOrder(db, { consumer: "test", sessionId: "s10", seq: 1, nowMs: 1 }, async () => {
        throw new Error("projection failed");
      });
      await expect(outcome).rejects.toThrow("projection failed");
      expect(await db("consumer_position").where({ session_id: "s10" }).first()).toBeUndefined();
    });
  });
}

let mariadb: TestDatabase;
suite("libs/db on real MariaDB", async () => {
  mariadb = await createTestDatabase("libs_db");
  return { db: mariadb.db, close: () => mariadb.drop() };
});
suite("libs/db on SQLite", async () => {
  const db = createMemoryDatabase();
  return { db, close: () => db.destroy() };
});
