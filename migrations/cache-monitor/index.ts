import { outboxMessageLeaseSlot, outboxMessageTable } from "@prefix-guard/bus";
import type { Migration } from "@prefix-guard/db";

// Dialect-neutral (MariaDB and SQLite): instants are UTC ms in BIGINT columns, costs are DOUBLE in
// the price table's currency unit, booleans are plain columns without server defaults, no foreign
// keys. Events are stored as they arrived, keyed by event_id so a redelivery is a no-op; the join
// between usage (llm.usage.v1) and builds (prompt.prefix.v1) is by (session_id, request_id) because
// the two topics arrive in any order relative to each other.

/**
 * One row per session seen on any input. Writers lock it (SELECT … FOR UPDATE) so a usage and a
 * prefix event of the same session never join against each other's uncommitted state.
 */
const sessionTable: Migration = {
  name: "0001_cm_session",
  async up(db) {
    await db.schema.createTable("cm_session", (t) => {
      t.string("session_id", 128).notNullable().primary();
      t.bigInteger("created_at_ms").notNullable();
      t.bigInteger("updated_at_ms").notNullable();
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("cm_session");
  },
};

/** prompt.prefix.v1 FingerprintObserved: what every build sent, for TraceSession. */
const prefixObservationTable: Migration = {
  name: "0002_cm_prefix_observation",
  async up(db) {
    await db.schema.createTable("cm_prefix_observation", (t) => {
      t.string("event_id", 64).notNullable().primary();
      t.string("session_id", 128).notNullable();
      t.string("request_id", 128).notNullable();
      t.bigInteger("occurred_at_ms").notNullable();
      // [{key, sha256, chars}] in build order.
      t.text("sections_json", "mediumtext").notNullable();
      t.string("tools_hash", 128).notNullable();
      t.string("history_hash", 128).notNullable();
      t.integer("messages").notNullable();
      t.boolean("first_build").notNullable();
      t.string("rules_decision", 64).notNullable();
      t.text("date_notices_json").notNullable();
      t.string("anchor_date", 16).notNullable();
      t.bigInteger("estimated_tokens").notNullable();
      t.string("model", 200).notNullable();
      t.integer("compaction_generation").notNullable();
      t.bigInteger("received_at_ms").notNullable();
      t.index(["session_id", "request_id"], "cm_prefix_observation_request");
      t.index(["session_id", "occurred_at_ms"], "cm_prefix_observation_session_time");
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("cm_prefix_observation");
  },
};

/** prompt.prefix.v1 PrefixChanged: what our fingerprints saw change, and why. */
const prefixChangeTable: Migration = {
  name: "0003_cm_prefix_change",
  async up(db) {
    await db.schema.createTable("cm_prefix_change", (t) => {
      t.string("event_id", 64).notNullable().primary();
      t.string("session_id", 128).notNullable();
      t.string("request_id", 128).notNullable();
      t.bigInteger("occurred_at_ms").notNullable();
      t.text("changed_sections_json").notNullable();
      t.boolean("tools_changed").notNullable();
      // "none" | "order_only" | "definitions"
      t.string("tools_change_kind", 32).notNullable();
      t.boolean("history_rewritten").notNullable();
      t.text("cause").notNullable();
      t.bigInteger("bytes_after_break").notNullable();
      t.bigInteger("tokens_after_break").notNullable();
      t.integer("messages").notNullable();
      t.bigInteger("received_at_ms").notNullable();
      t.index(["session_id", "request_id"], "cm_prefix_change_request");
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("cm_prefix_change");
  },
};

/**
 * llm.usage.v1 / RecordUsage: one row per LLM call. Several calls may send the same body (request_id
 * is a hash of it), so (session_id, request_id) is not unique; event_id is.
 */
const usageTable: Migration = {
  name: "0004_cm_usage",
  async up(db) {
    await db.schema.createTable("cm_usage", (t) => {
      t.increments("id").primary();
      t.string("event_id", 64).notNullable().unique("cm_usage_event_id");
      t.string("session_id", 128).notNullable();
      t.string("request_id", 128).notNullable();
      t.string("model", 200).notNullable();
      t.string("provider", 100).notNullable();
      t.bigInteger("prompt_tokens").notNullable();
      t.bigInteger("cached_tokens").notNullable();
      t.bigInteger("completion_tokens").notNullable();
      t.bigInteger("cache_creation_tokens").notNullable();
      t.double("reported_cost").nullable();
      // Reported cost, else priced from the table at record time.
      t.double("cost").notNullable();
      // ProviderCacheReport as JSON; NULL when the harness sent none.
      t.text("provider_report_json", "mediumtext").nullable();
      t.bigInteger("called_at_ms").notNullable();
      t.bigInteger("recorded_at_ms").notNullable();
      // "rpc" (RecordUsage, republished on llm.usage.v1) | "topic" (consumed from llm.usage.v1)
      t.string("source", 16).notNullable();
      t.index(["session_id", "called_at_ms"], "cm_usage_session_time");
      t.index(["session_id", "request_id"], "cm_usage_request");
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("cm_usage");
  },
};

/**
 * A call whose cached share fell far below its session's norm. The detection columns are fixed when
 * the usage is recorded; the explanation columns (changed sections, cause, attribution) are
 * rewritten when the build's prefix events arrive later.
 */
const collapseTable: Migration = {
  name: "0005_cm_collapse",
  async up(db) {
    await db.schema.createTable("cm_collapse", (t) => {
      t.increments("id").primary();
      t.integer("usage_id").unsigned().notNullable().unique("cm_collapse_usage");
      t.string("session_id", 128).notNullable();
      t.string("request_id", 128).notNullable();
      t.string("model", 200).notNullable();
      t.bigInteger("prompt_tokens").notNullable();
      t.bigInteger("cached_tokens").notNullable();
      t.double("cached_ratio").notNullable();
      t.double("baseline_ratio").notNullable();
      t.double("cost").notNullable();
      t.double("expected_cost").notNullable();
      t.double("extra_cost").notNullable();
      t.text("changed_sections_json").notNullable();
      t.boolean("tools_changed").notNullable();
      t.boolean("history_rewritten").notNullable();
      // "changed" | "unchanged" | "first_build" | "unknown" (no prefix event yet)
      t.string("our_verdict", 16).notNullable();
      t.text("cause").notNullable();
      // "none" | "provider_only" | "ours_only" | "unknown"
      t.string("attribution", 16).notNullable();
      t.text("provider_cache_miss_reason").notNullable();
      t.bigInteger("called_at_ms").notNullable();
      t.bigInteger("detected_at_ms").notNullable();
      t.bigInteger("updated_at_ms").notNullable();
      t.index(["called_at_ms"], "cm_collapse_time");
      t.index(["session_id", "called_at_ms"], "cm_collapse_session_time");
      t.index(["session_id", "request_id"], "cm_collapse_request");
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("cm_collapse");
  },
};

/**
 * One row per (collapse, section it is counted under), so ListCollapses' per-section totals are one
 * GROUP BY on either dialect. Window columns are copied from the collapse to keep that query single-table.
 */
const collapseSectionTable: Migration = {
  name: "0006_cm_collapse_section",
  async up(db) {
    await db.schema.createTable("cm_collapse_section", (t) => {
      t.integer("collapse_id").unsigned().notNullable();
      t.string("section", 128).notNullable();
      t.string("session_id", 128).notNullable();
      t.bigInteger("called_at_ms").notNullable();
      t.double("extra_cost").notNullable();
      t.primary(["collapse_id", "section"]);
      t.index(["called_at_ms"], "cm_collapse_section_time");
      t.index(["session_id", "called_at_ms"], "cm_collapse_section_session_time");
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("cm_collapse_section");
  },
};

/** A compaction request's observation: joined with its usage, never the session's previous build. */
const observationCompactionRequest: Migration = {
  name: "0007_cm_observation_compaction_request",
  async up(db) {
    await db.schema.alterTable("cm_prefix_observation", (t) => {
      t.boolean("compaction_request").notNullable().defaultTo(false);
    });
  },
  async down(db) {
    await db.schema.alterTable("cm_prefix_observation", (t) => {
      t.dropColumn("compaction_request");
    });
  },
};

/**
 * docs/decisions/usage-currency.md: the currency each usage was priced in (a price book has one; ""
 * = a row stored before this was recorded) and the 1-hour share of its cache writes, priced apart
 * from 5-minute writes.
 */
const usageCurrencyAndLongWrites: Migration = {
  name: "0008_cm_usage_currency_1h_writes",
  async up(db) {
    await db.schema.alterTable("cm_usage", (t) => {
      t.string("currency", 16).notNullable().defaultTo("");
      t.bigInteger("cache_creation_1h_tokens").notNullable().defaultTo(0);
    });
  },
  async down(db) {
    await db.schema.alterTable("cm_usage", (t) => {
      t.dropColumn("currency");
      t.dropColumn("cache_creation_1h_tokens");
    });
  },
};

/**
 * docs/decisions/usage-identity.md: RecordUsage is idempotent by key. One key stores one row per
 * session (the unique index is what makes a retry racing its original store nothing twice);
 * content_sha256 tells a retry from another record reusing the key. Rows from llm.usage.v1 and rows
 * stored before this have no key (NULL is never equal to NULL in a unique index, on MariaDB and
 * SQLite alike).
 */
const usageIdempotency: Migration = {
  name: "0009_cm_usage_idempotency",
  async up(db) {
    await db.schema.alterTable("cm_usage", (t) => {
      t.string("idempotency_key", 400).nullable();
      t.string("content_sha256", 64).nullable();
      t.string("provider_response_id", 200).nullable();
      // The harness said the request_id names no build of prefix-guard.
      t.boolean("unbuilt").notNullable().defaultTo(false);
      t.unique(["session_id", "idempotency_key"], { indexName: "cm_usage_idempotency_key" });
    });
  },
  async down(db) {
    await db.schema.alterTable("cm_usage", (t) => {
      t.dropUnique(["session_id", "idempotency_key"], "cm_usage_idempotency_key");
      t.dropColumn("idempotency_key");
      t.dropColumn("content_sha256");
      t.dropColumn("provider_response_id");
      t.dropColumn("unbuilt");
    });
  },
};

/**
 * docs/decisions/collapse-causes.md: each collapse's code from the closed cause list and the disagreement between its
 * witnesses; "" for collapses stored before, which ListCollapses counts under "unknown".
 */
const collapseCauseCode: Migration = {
  name: "0010_cm_collapse_cause_code",
  async up(db) {
    await db.schema.alterTable("cm_collapse", (t) => {
      t.string("cause_code", 200).notNullable().defaultTo("");
      t.text("cause_disagreement").nullable();
    });
  },
  async down(db) {
    await db.schema.alterTable("cm_collapse", (t) => {
      t.dropColumn("cause_code");
      t.dropColumn("cause_disagreement");
    });
  },
};

/** The build's workspace on each observation: AdviseRetention for a workspace's sessions. */
const observationWorkspace: Migration = {
  name: "0011_cm_observation_workspace",
  async up(db) {
    await db.schema.alterTable("cm_prefix_observation", (t) => {
      t.string("workspace", 512).notNullable().defaultTo("");
      t.index(["workspace", "session_id"], "cm_prefix_observation_workspace_idx");
    });
  },
  async down(db) {
    await db.schema.alterTable("cm_prefix_observation", (t) => {
      t.dropIndex(["workspace", "session_id"], "cm_prefix_observation_workspace_idx");
      t.dropColumn("workspace");
    });
  },
};

/** The retention each build asked for: what the next call's cache entry was left under. */
const observationCacheRetention: Migration = {
  name: "0012_cm_observation_cache_retention",
  async up(db) {
    await db.schema.alterTable("cm_prefix_observation", (t) => {
      t.string("cache_retention", 16).notNullable().defaultTo("");
    });
  },
  async down(db) {
    await db.schema.alterTable("cm_prefix_observation", (t) => {
      t.dropColumn("cache_retention");
    });
  },
};

/**
 * Who each observed build's session belongs to (its scope and owner, from prompt-assembly): what a
 * harness may be told about a session here. Builds observed before this are in the empty scope.
 */
const observationOwnership: Migration = {
  name: "0013_cm_observation_ownership",
  async up(db) {
    await db.schema.alterTable("cm_prefix_observation", (t) => {
      t.string("scope", 128).notNullable().defaultTo("");
      t.string("owner", 128).notNullable().defaultTo("");
    });
  },
  async down(db) {
    await db.schema.alterTable("cm_prefix_observation", (t) => {
      t.dropColumn("owner");
      t.dropColumn("scope");
    });
  },
};

/**
 * docs/decisions/awaited-prefix-change.md: whether the observed build also published a
 * PrefixChanged (FingerprintObserved prefix_changed). NULL for builds observed before it, or from
 * builders that do not say: their change facts are unknown until a PrefixChanged arrives.
 */
const observationPrefixChanged: Migration = {
  name: "0014_cm_observation_prefix_changed",
  async up(db) {
    await db.schema.alterTable("cm_prefix_observation", (t) => {
      t.boolean("prefix_changed").nullable();
    });
  },
  async down(db) {
    await db.schema.alterTable("cm_prefix_observation", (t) => {
      t.dropColumn("prefix_changed");
    });
  },
};

/**
 * docs/decisions/gateway.md: requests the gateway forwarded, explained like our builds. Which part of prefix-guard
 * saw each record (traffic_source: NULL or "prompt-assembly" = our builds, "gateway"); a gateway
 * observation's cut into cache order (blocks: index, kind, role, sha256, bytes, offset); a gateway
 * change's first changed block and the byte where the request diverged, kept on its collapse too.
 * NULL on everything stored before, and wherever a record has no such fact.
 */
const gatewayObservations: Migration = {
  name: "0015_cm_gateway_observations",
  async up(db) {
    await db.schema.alterTable("cm_prefix_observation", (t) => {
      t.string("traffic_source", 32).nullable();
      t.text("cut_json", "mediumtext").nullable();
    });
    for (const table of ["cm_prefix_change", "cm_collapse"])
      await db.schema.alterTable(table, (t) => {
        t.string("traffic_source", 32).nullable();
        t.integer("changed_block_index").nullable();
        t.string("changed_block_kind", 16).nullable();
        t.string("changed_block_role", 64).nullable();
        t.bigInteger("diverged_offset").nullable();
      });
    await db.schema.alterTable("cm_usage", (t) => {
      t.string("traffic_source", 32).nullable();
    });
  },
  async down(db) {
    await db.schema.alterTable("cm_usage", (t) => {
      t.dropColumn("traffic_source");
    });
    for (const table of ["cm_collapse", "cm_prefix_change"])
      await db.schema.alterTable(table, (t) => {
        t.dropColumn("diverged_offset");
        t.dropColumn("changed_block_role");
        t.dropColumn("changed_block_kind");
        t.dropColumn("changed_block_index");
        t.dropColumn("traffic_source");
      });
    await db.schema.alterTable("cm_prefix_observation", (t) => {
      t.dropColumn("cut_json");
      t.dropColumn("traffic_source");
    });
  },
};

export const cacheMonitorMigrations: Migration[] = [
  outboxMessageTable,
  sessionTable,
  prefixObservationTable,
  prefixChangeTable,
  usageTable,
  collapseTable,
  collapseSectionTable,
  observationCompactionRequest,
  usageCurrencyAndLongWrites,
  usageIdempotency,
  collapseCauseCode,
  observationWorkspace,
  observationCacheRetention,
  observationOwnership,
  observationPrefixChanged,
  gatewayObservations,
  outboxMessageLeaseSlot,
];
