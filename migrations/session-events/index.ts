import { assignLeaseSlots } from "@prefix-guard/bus";
import type { Migration } from "@prefix-guard/db";
import type { Knex } from "knex";

function isMysql(db: Knex): boolean {
  return db.client.config.client === "mysql2";
}

/**
 * Ids are case-sensitive ("Abc" and "abc" are two sessions); knex would otherwise give MySQL tables
 * the connection charset's default, case-insensitive collation.
 */
function binaryCollation(db: Knex, t: Knex.CreateTableBuilder): void {
  if (isMysql(db)) {
    t.charset("utf8mb4");
    t.collate("utf8mb4_bin");
  }
}

/**
 * The event store, which is also the outbox: the relay publishes rows with published_at_ms NULL in
 * (session_id, seq) order and then stamps them. UNIQUE(session_id, seq) is the optimistic-concurrency
 * guard: two writers that computed the same next seq cannot both commit.
 */
const sessionEventTable: Migration = {
  name: "0001_session_event",
  async up(db) {
    const mysql = isMysql(db);
    await db.schema.createTable("session_event", (t) => {
      binaryCollation(db, t);
      t.increments("id");
      t.string("event_id", 36).notNullable().unique({ indexName: "session_event_event_id_unique" });
      t.string("session_id", 128).notNullable();
      t.bigInteger("seq").notNullable();
      t.string("type", 40).notNullable();
      // The whole encoded SessionEvent envelope; BLOB (64 KiB) is too small for a large message on MySQL.
      if (mysql) t.specificType("payload", "MEDIUMBLOB").notNullable();
      else t.binary("payload").notNullable();
      t.bigInteger("occurred_at_ms").notNullable();
      t.string("traceparent", 55).nullable();
      t.bigInteger("published_at_ms").nullable();
      t.unique(["session_id", "seq"], { indexName: "session_event_session_seq_unique" });
      t.index(["published_at_ms", "session_id", "seq"], "session_event_unpublished_idx");
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("session_event");
  },
};

/** Projections owned by session-events, updated in the same transaction as the event append. */
const sessionProjectionTables: Migration = {
  name: "0002_session_projections",
  async up(db) {
    await db.schema.createTable("session", (t) => {
      binaryCollation(db, t);
      t.string("session_id", 128).notNullable().primary();
      t.string("owner", 128).notNullable();
      t.string("workspace", 1024).notNullable().defaultTo("");
      t.string("timezone", 64).notNullable();
      t.string("kind", 8).notNullable();
      t.string("parent_session_id", 128).nullable();
      t.bigInteger("last_seq").notNullable();
      t.integer("compaction_generation").notNullable().defaultTo(0);
      t.string("compaction_boundary_message_id", 128).nullable();
      t.text("summary").notNullable();
      t.string("inherited_summary_from", 128).nullable();
      t.integer("content_chars").notNullable().defaultTo(0);
      t.bigInteger("serialized_bytes").notNullable().defaultTo(0);
      t.bigInteger("created_at_ms").notNullable();
      t.boolean("deleted").notNullable().defaultTo(false);
      t.boolean("ended").notNullable().defaultTo(false);
      t.index(["owner"], "session_owner_idx");
    });
    await db.schema.createTable("message", (t) => {
      binaryCollation(db, t);
      t.string("message_id", 128).notNullable().primary();
      t.string("session_id", 128).notNullable();
      t.bigInteger("seq").notNullable();
      t.string("role", 16).notNullable();
      t.text("content_json", "mediumtext").notNullable();
      t.text("thinking_text", "mediumtext").notNullable();
      t.integer("thinking_chars").notNullable();
      t.integer("content_chars").notNullable();
      t.bigInteger("created_at_ms").notNullable();
      t.string("local_date", 10).notNullable();
      t.boolean("deleted").notNullable().defaultTo(false);
      t.index(["session_id", "seq"], "message_session_seq_idx");
    });
    await db.schema.createTable("compaction", (t) => {
      binaryCollation(db, t);
      t.string("session_id", 128).notNullable();
      t.integer("generation").notNullable();
      t.string("boundary_message_id", 128).notNullable();
      t.text("summary").notNullable();
      t.bigInteger("committed_at_ms").notNullable();
      t.primary(["session_id", "generation"]);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("compaction");
    await db.schema.dropTableIfExists("message");
    await db.schema.dropTableIfExists("session");
  },
};

/** The session's language: every text prompt-assembly renders for it follows this. */
const sessionLocale: Migration = {
  name: "0003_session_locale",
  async up(db) {
    await db.schema.alterTable("session", (t) => {
      t.string("locale", 8).notNullable().defaultTo("zh-CN");
    });
  },
  async down(db) {
    await db.schema.alterTable("session", (t) => {
      t.dropColumn("locale");
    });
  },
};

/**
 * Who a session belongs to beyond its owner: the scope (tenant) of the principal that created it, and
 * that principal's name (its session quota counts live sessions by it). Sessions from before
 * principals existed belong to the empty scope, the one the local principal of `make run` uses.
 */
const sessionScope: Migration = {
  name: "0004_session_scope",
  async up(db) {
    await db.schema.alterTable("session", (t) => {
      t.string("scope", 128).notNullable().defaultTo("");
      t.string("created_by", 64).notNullable().defaultTo("");
      t.index(["created_by", "deleted"], "session_created_by_idx");
    });
  },
  async down(db) {
    await db.schema.alterTable("session", (t) => {
      t.dropIndex(["created_by", "deleted"], "session_created_by_idx");
      t.dropColumn("created_by");
      t.dropColumn("scope");
    });
  },
};

/**
 * One AES-256 data key per session (crypto-shredding, libs/events sealed-content.ts): every content
 * field of the session's events is sealed with it. Erasing the session empties `key` and stamps
 * erased_at_ms; the row stays so GetDataKeys can tell an erased session from an unknown one.
 */
const sessionDataKey: Migration = {
  name: "0005_session_data_key",
  async up(db) {
    await db.schema.createTable("session_data_key", (t) => {
      binaryCollation(db, t);
      t.string("session_id", 128).notNullable().primary();
      t.string("key_id", 36).notNullable();
      // VARBINARY(32) on MySQL: empty once erased, never zero-padded ("key" is reserved in MySQL).
      t.binary("key_bytes", 32).notNullable();
      t.bigInteger("created_at_ms").notNullable();
      t.bigInteger("erased_at_ms").nullable();
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("session_data_key");
  },
};

/**
 * The session's last activity (its newest event's occurred_at_ms), kept on every write so the
 * retention sweep finds idle sessions by index instead of aggregating the event log. Existing
 * sessions take their newest event's time: a long-lived, still active session must not look idle.
 */
const sessionLastEventAt: Migration = {
  name: "0006_session_last_event_at",
  async up(db) {
    await db.schema.alterTable("session", (t) => {
      t.bigInteger("last_event_at_ms").notNullable().defaultTo(0);
      t.index(["deleted", "last_event_at_ms"], "session_idle_idx");
    });
    await db.raw(
      `UPDATE session SET last_event_at_ms = COALESCE(
         (SELECT MAX(e.occurred_at_ms) FROM session_event e WHERE e.session_id = session.session_id),
         created_at_ms)`,
    );
  },
  async down(db) {
    await db.schema.alterTable("session", (t) => {
      t.dropIndex(["deleted", "last_event_at_ms"], "session_idle_idx");
      t.dropColumn("last_event_at_ms");
    });
  },
};

/**
 * The relay lease slot of each event (docs/decisions/relay-leases.md): the slot of its session id,
 * stored at append so a relay split over leases reads its own sessions' rows by index, and SQLite and
 * MySQL agree on it. Unpublished events get theirs here; published ones keep 0 (never read again).
 */
const sessionEventLeaseSlot: Migration = {
  name: "0007_session_event_lease_slot",
  async up(db) {
    await db.schema.alterTable("session_event", (t) => {
      t.smallint("lease_slot").notNullable().defaultTo(0);
      t.index(["published_at_ms", "lease_slot", "session_id", "seq"], "session_event_unpublished_by_slot");
    });
    await assignLeaseSlots(db, "session_event", "session_id");
  },
  async down(db) {
    await db.schema.alterTable("session_event", (t) => {
      t.dropIndex(["published_at_ms", "lease_slot", "session_id", "seq"], "session_event_unpublished_by_slot");
      t.dropColumn("lease_slot");
    });
  },
};

export const sessionEventsMigrations: Migration[] = [
  sessionEventTable,
  sessionProjectionTables,
  sessionLocale,
  sessionScope,
  sessionDataKey,
  sessionLastEventAt,
  sessionEventLeaseSlot,
];
