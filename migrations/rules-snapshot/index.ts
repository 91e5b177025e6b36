import { consumerPositionTable, type Migration } from "@prefix-guard/db";

/**
 * Seed 001 §4.1, dialect-neutral: instants are UTC ms in BIGINT columns (no DATETIME defaults), so
 * MariaDB and SQLite store and return the same values. No foreign keys, like every other table here.
 */
const sessionWorkspaceRulesTable: Migration = {
  name: "0001_session_workspace_rules",
  async up(db) {
    await db.schema.createTable("session_workspace_rules", (t) => {
      t.string("session_id", 128).notNullable().primary();
      // The effective workspace at pin time; a different current workspace makes the row invalid (§3.3).
      t.string("workspace", 512).notNullable();
      // The injected section itself, heading and 200-line notice included: what is stored is what is sent.
      t.text("rules_text", "mediumtext").notNullable();
      t.string("rules_hash", 64).notNullable();
      // NULL for content reported by a local client.
      t.string("source_path", 1024).nullable();
      t.bigInteger("source_mtime_ms").nullable();
      // Compaction generation the snapshot was pinned under; an older one than the caller's is stale.
      t.integer("generation").notNullable().defaultTo(0);
      // Disk hash already reported as "changed/empty on disk"; keeps the report once per hash across restarts.
      t.string("last_reported_disk_hash", 64).nullable();
      t.bigInteger("created_at_ms").notNullable();
      t.bigInteger("updated_at_ms").notNullable();
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("session_workspace_rules");
  },
};

/**
 * An operator's refresh (Invalidate) of a session, until the session's next pin: that pin then
 * answers REPINNED_OPERATOR_REFRESH with the reason, so the prefix change it causes is explained.
 */
const sessionRulesRefreshTable: Migration = {
  name: "0002_session_rules_refresh",
  async up(db) {
    await db.schema.createTable("session_rules_refresh", (t) => {
      t.string("session_id", 128).notNullable().primary();
      t.string("reason", 512).notNullable();
      t.bigInteger("requested_at_ms").notNullable();
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("session_rules_refresh");
  },
};

export const rulesSnapshotMigrations: Migration[] = [
  consumerPositionTable,
  sessionWorkspaceRulesTable,
  sessionRulesRefreshTable,
];
