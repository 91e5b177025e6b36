import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { UnavailableError } from "@prefix-guard/errors";
import { rulesSnapshotMigrations } from "@prefix-guard/migrations/rules-snapshot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PinnedSnapshot } from "../../domain/model";
import { SnapshotStore } from "./snapshot-store";

function snapshot(sessionId: string, overrides: Partial<PinnedSnapshot> = {}): PinnedSnapshot {
  return {
    sessionId,
    workspace: "/srv/ws/a",
    rulesText: "## 工作区规则\n\n规则 A",
    rulesHash: "a".repeat(64),
    sourcePath: "/srv/ws/a/AGENTS.md",
    sourceMtimeMs: 1_760_000_000_123,
    generation: 0,
    ...overrides,
  };
}

async function countRows(db: Database, sessionId: string): Promise<number> {
  const [row] = await db("session_workspace_rules").where({ session_id: sessionId }).count({ n: "*" });
  return Number(row?.n);
}

function suite(name: string, open: () => Promise<{ db: Database; close: () => Promise<void> }>) {
  describe(name, () => {
    let db: Database;
    let close: () => Promise<void>;
    let store: SnapshotStore;
    beforeAll(async () => {
      ({ db, close } = await open());
      expect(await runMigrations(db, rulesSnapshotMigrations)).toEqual([
        "0000_consumer_position",
        "0001_session_workspace_rules",
        "0002_session_rules_refresh",
      ]);
      store = new SnapshotStore(db);
    });
    afterAll(async () => close());

    it("reads the rows of many sessions in one statement, leaving out sessions without one", async () => {
      await store.upsert(snapshot("s-many-1"), 1_000);
      await store.upsert({ ...snapshot("s-many-2"), workspace: "/srv/ws/b" }, 2_000);
      const rows = await store.findBySessions(["s-many-1", "s-many-none", "s-many-2"]);
      expect([...rows.keys()].sort()).toEqual(["s-many-1", "s-many-2"]);
      expect(rows.get("s-many-1")).toEqual(await store.findBySession("s-many-1"));
      expect(rows.get("s-many-2")?.workspace).toBe("/srv/ws/b");
      expect((await store.findBySessions([])).size).toBe(0);
    });

    it("takes a text it has read once by its hash, and reads a new hash's text", async () => {
      const reader = new SnapshotStore(db);
      await reader.upsert(snapshot("s-text-1"), 1_000);
      expect((await reader.findBySessions(["s-text-1"])).get("s-text-1")?.rulesText).toBe("## 工作区规则\n\n规则 A");
      // The text column changed under the same hash (only a hand edit can do that): the text known
      // for the hash is answered, which shows the grouped read no longer fetched the column.
      await db("session_workspace_rules").where({ session_id: "s-text-1" }).update({ rules_text: "edited by hand" });
      expect((await reader.findBySessions(["s-text-1"])).get("s-text-1")?.rulesText).toBe("## 工作区规则\n\n规则 A");
      // A session pinned with another hash has its text read, alongside one answered from memory.
      await reader.upsert({ ...snapshot("s-text-2"), rulesText: "## other", rulesHash: "b".repeat(64) }, 2_000);
      const rows = await reader.findBySessions(["s-text-1", "s-text-2"]);
      expect(rows.get("s-text-2")).toMatchObject({ rulesText: "## other", rulesHash: "b".repeat(64) });
      expect(rows.get("s-text-1")?.rulesText).toBe("## 工作区规则\n\n规则 A");
      // A fresh store (a restarted process) knows no text: it reads the column.
      expect((await new SnapshotStore(db).findBySessions(["s-text-1"])).get("s-text-1")?.rulesText).toBe(
        "edited by hand",
      );
    });

    it("misses an unknown session and finds a stored one with every column", async () => {
      expect(await store.findBySession("s-none")).toBeNull();
      await store.upsert(snapshot("s-find"), 1_000);
      expect(await store.findBySession("s-find")).toEqual({
        sessionId: "s-find",
        workspace: "/srv/ws/a",
        rulesText: "## 工作区规则\n\n规则 A",
        rulesHash: "a".repeat(64),
        sourcePath: "/srv/ws/a/AGENTS.md",
        sourceMtimeMs: 1_760_000_000_123,
        generation: 0,
        lastReportedDiskHash: null,
        createdAtMs: 1_000,
        updatedAtMs: 1_000,
      });
    });

    it("overwrites every column on a conflicting key, workspace and report mark included", async () => {
      await store.upsert(snapshot("s-over"), 1_000);
      expect(await store.markReported("s-over", "d".repeat(64), "a".repeat(64), 1_500)).toBe(true);
      await store.upsert(
        snapshot("s-over", {
          workspace: "/srv/ws/b",
          rulesText: "## 工作区规则\n\n规则 B",
          rulesHash: "b".repeat(64),
          sourcePath: null,
          sourceMtimeMs: null,
          generation: 4,
        }),
        2_000,
      );
      expect(await countRows(db, "s-over")).toBe(1);
      expect(await store.findBySession("s-over")).toEqual({
        sessionId: "s-over",
        workspace: "/srv/ws/b",
        rulesText: "## 工作区规则\n\n规则 B",
        rulesHash: "b".repeat(64),
        sourcePath: null,
        sourceMtimeMs: null,
        generation: 4,
        lastReportedDiskHash: null,
        createdAtMs: 2_000,
        updatedAtMs: 2_000,
      });
    });

    it("keeps one row when first upserts of a session race", async () => {
      await Promise.all([1, 2, 3, 4, 5].map((i) => store.upsert(snapshot("s-race"), i)));
      expect(await countRows(db, "s-race")).toBe(1);
    });

    it("stores a 15 KB section byte for byte", async () => {
      const text = `## 工作区规则\n\n${"| 仓库 | 说明 |\n".repeat(1_200)}`;
      await store.upsert(snapshot("s-big", { rulesText: text }), 1);
      expect((await store.findBySession("s-big"))?.rulesText).toBe(text);
    });

    it("reports the number of rows a delete removed", async () => {
      await store.upsert(snapshot("s-del"), 1);
      expect(await store.deleteBySession("s-del")).toBe(1);
      expect(await store.deleteBySession("s-del")).toBe(0);
      expect(await countRows(db, "s-del")).toBe(0);
    });

    it("deletes by generation only rows pinned under an older one", async () => {
      await store.upsert(snapshot("s-gen", { generation: 2 }), 1);
      expect(await store.deleteOlderThanGeneration("s-gen", 2)).toBe(0);
      expect(await countRows(db, "s-gen")).toBe(1);
      expect(await store.deleteOlderThanGeneration("s-gen", 3)).toBe(1);
      expect(await countRows(db, "s-gen")).toBe(0);
    });

    it("marks a disk hash reported once, and only on the snapshot it was seen against", async () => {
      await store.upsert(snapshot("s-mark"), 1);
      expect(await store.markReported("s-mark", "x".repeat(64), "a".repeat(64), 10)).toBe(true);
      expect(await store.markReported("s-mark", "x".repeat(64), "a".repeat(64), 11)).toBe(false);
      expect(await store.markReported("s-mark", "y".repeat(64), "a".repeat(64), 12)).toBe(true);
      expect(await store.markReported("s-mark", "z".repeat(64), "not-the-pinned-hash", 13)).toBe(false);
      expect(await store.markReported("s-none", "x".repeat(64), "a".repeat(64), 14)).toBe(false);
      expect(await store.findBySession("s-mark")).toMatchObject({
        lastReportedDiskHash: "y".repeat(64),
        updatedAtMs: 12,
      });
    });

    it("rolls back writes of a failed transaction", async () => {
      const failed = store.transaction(async (trx) => {
        await store.upsert(snapshot("s-rollback"), 1, trx);
        throw new Error("event sink failed");
      });
      await expect(failed).rejects.toThrow("event sink failed");
      expect(await countRows(db, "s-rollback")).toBe(0);
    });
  });
}

let mariadb: TestDatabase;
suite("snapshot store on real MariaDB", async () => {
  mariadb = await createTestDatabase("rules_store");
  return { db: mariadb.db, close: () => mariadb.drop() };
});

let sqliteDir: string;
suite("snapshot store on SQLite", async () => {
  sqliteDir = await mkdtemp(join(tmpdir(), "rules-store-"));
  const db = createDatabase(`sqlite:${join(sqliteDir, "rules.sqlite")}`);
  return {
    db,
    close: async () => {
      await db.destroy();
      await rm(sqliteDir, { recursive: true, force: true });
    },
  };
});

describe("snapshot store without a database", () => {
  it("reports an unreachable server as UnavailableError", async () => {
    const db = createDatabase("mysql://root@127.0.0.1:1/rules_snapshot", {
      connectTimeoutMs: 1_000,
      acquireTimeoutMs: 1_000,
    });
    try {
      await expect(new SnapshotStore(db).findBySession("s1")).rejects.toBeInstanceOf(UnavailableError);
    } finally {
      await db.destroy();
    }
  });
});
