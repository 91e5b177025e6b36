// Relative because migrations/package.json does not (yet) depend on @prefix-guard/bus; switch to
// `import { outboxMessageTable } from "@prefix-guard/bus"` once it does. Same module either way.
import { outboxMessageLeaseSlot, outboxMessageTable } from "@prefix-guard/bus";
import { consumerPositionTable, type Migration } from "@prefix-guard/db";

// Dialect-neutral (MariaDB and SQLite): instants are UTC ms in BIGINT columns, booleans are plain
// columns without server defaults, no foreign keys. Everything here is a projection of
// session.events.v1 (rebuildable from the event store) except pa_prefix_fingerprint, which is
// prompt-assembly's own memory of the last prefix it sent per session.

/** One row per session seen on session.events.v1; a deleted or ended session stays as a tombstone. */
const sessionTable: Migration = {
  name: "0001_pa_session",
  async up(db) {
    await db.schema.createTable("pa_session", (t) => {
      t.string("session_id", 128).notNullable().primary();
      // "main" | "side" | "embed"
      t.string("kind", 16).notNullable();
      // IANA zone from SessionCreated: "today" for a session without user messages is taken in it.
      t.string("timezone", 64).notNullable();
      // Compaction generation, 0 before the first compaction.
      t.integer("generation").notNullable();
      t.string("boundary_message_id", 128).nullable();
      // Latest compaction summary, else the summary inherited at creation (seed 002 §5.3), else NULL.
      t.text("summary", "mediumtext").nullable();
      t.bigInteger("last_seq").notNullable();
      t.boolean("deleted").notNullable();
      // A promoted side task: its state is dropped, builds are refused.
      t.boolean("ended").notNullable();
      t.bigInteger("updated_at_ms").notNullable();
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("pa_session");
  },
};

/** Messages as saved; deletions only flag them, so a compaction boundary can always be found. */
const messageTable: Migration = {
  name: "0002_pa_message",
  async up(db) {
    await db.schema.createTable("pa_message", (t) => {
      t.string("session_id", 128).notNullable();
      t.string("message_id", 128).notNullable();
      t.bigInteger("seq").notNullable();
      // "user" | "assistant" | "tool" | "system"
      t.string("role", 16).notNullable();
      // Domain ContentPart[] as canonical JSON.
      t.text("content_json", "mediumtext").notNullable();
      // YYYY-MM-DD in the session's zone, computed once by the writer (seed 000 §3.2); "" when absent.
      t.string("local_date", 10).notNullable();
      t.bigInteger("created_at_ms").notNullable();
      t.boolean("deleted").notNullable();
      t.primary(["session_id", "message_id"]);
      t.index(["session_id", "seq"], "pa_message_session_seq");
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("pa_message");
  },
};

/**
 * The last prefix fingerprint per session, with what the cause explanation needs from the build
 * that produced it. Persisted rather than kept in a process LRU: a restart must not make the next
 * build look like a first build (seed 001 §1.2 "重启即失忆").
 */
const prefixFingerprintTable: Migration = {
  name: "0003_pa_prefix_fingerprint",
  async up(db) {
    await db.schema.createTable("pa_prefix_fingerprint", (t) => {
      t.string("session_id", 128).notNullable().primary();
      t.text("fingerprint_json", "mediumtext").notNullable();
      t.integer("generation").notNullable();
      t.integer("dropped_turns").notNullable();
      t.string("anchor_date", 10).notNullable();
      t.string("request_id", 64).notNullable();
      t.bigInteger("updated_at_ms").notNullable();
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("pa_prefix_fingerprint");
  },
};

/**
 * `version` counts the writes of a fingerprint row, so a builder that remembers the fingerprint it
 * wrote knows whether it is still the stored one (another replica may have written since).
 */
const fingerprintVersion: Migration = {
  name: "0004_pa_fingerprint_version",
  async up(db) {
    await db.schema.alterTable("pa_prefix_fingerprint", (t) => {
      t.bigInteger("version").notNullable().defaultTo(0);
    });
  },
  async down(db) {
    await db.schema.alterTable("pa_prefix_fingerprint", (t) => {
      t.dropColumn("version");
    });
  },
};

/** The session's workspace and language, from SessionCreated (builds may name neither). */
const sessionWorkspaceAndLocale: Migration = {
  name: "0005_pa_session_workspace_locale",
  async up(db) {
    await db.schema.alterTable("pa_session", (t) => {
      t.string("workspace", 1024).notNullable().defaultTo("");
      t.string("locale", 8).notNullable().defaultTo("zh-CN");
    });
  },
  async down(db) {
    await db.schema.alterTable("pa_session", (t) => {
      t.dropColumn("workspace");
      t.dropColumn("locale");
    });
  },
};

/**
 * Who the session belongs to (SessionCreated's owner and scope): a build is answered only to a
 * caller that may see the session. Sessions projected before this are in the empty scope with an
 * empty owner; RebuildProjection fills both in from session-events.
 */
const sessionOwnership: Migration = {
  name: "0006_pa_session_ownership",
  async up(db) {
    await db.schema.alterTable("pa_session", (t) => {
      t.string("owner", 128).notNullable().defaultTo("");
      t.string("scope", 128).notNullable().defaultTo("");
    });
  },
  async down(db) {
    await db.schema.alterTable("pa_session", (t) => {
      t.dropColumn("owner");
      t.dropColumn("scope");
    });
  },
};

/**
 * Erasure: a deleted or promoted session's tombstone keeps no summary (the projection drops it from
 * now on); tombstones written before that lose theirs here.
 */
const tombstonesWithoutSummary: Migration = {
  name: "0007_pa_tombstone_without_summary",
  async up(db) {
    await db("pa_session")
      .where((query) => query.where({ deleted: true }).orWhere({ ended: true }))
      .whereNotNull("summary")
      .update({ summary: null });
  },
  async down() {
    // An erased summary does not come back.
  },
};

export const promptAssemblyMigrations: Migration[] = [
  consumerPositionTable,
  outboxMessageTable,
  sessionTable,
  messageTable,
  prefixFingerprintTable,
  fingerprintVersion,
  sessionWorkspaceAndLocale,
  sessionOwnership,
  tombstonesWithoutSummary,
  outboxMessageLeaseSlot,
];
