import { hostname } from "node:os";
import { type Migration, type Sql, type Statement, valueRows, withSql } from "@prefix-guard/db";
import type { Logger } from "@prefix-guard/logging";
import type { Knex } from "knex";
import { RELAY_LEASE_SLOTS, relayLeaseSlot, slotsOfLease } from "./lease-slots";
import { type MessageBus, type OutgoingMessage, sleep } from "./port";
import type { RelayLeases, RelayLock } from "./relay-locks";

/** One row waiting to be published. `id` identifies it for markPublished. */
export interface OutboxRow {
  readonly id: number;
  readonly topic: string;
  readonly message: OutgoingMessage;
}

/** Where a relay reads from: session-events' own event table, or the generic outbox table. */
export interface OutboxSource {
  readonly name: string;
  /**
   * Unpublished rows, per key in write order; with `slots`, only rows stored with one of those lease
   * slots (lease-slots.ts), which hold every row of their keys. Without, every row.
   */
  fetchUnpublished(limit: number, slots?: readonly number[]): Promise<OutboxRow[]>;
  markPublished(ids: readonly number[], nowMs: number): Promise<void>;
  countUnpublished(): Promise<number>;
  /**
   * Deletes at most `limit` rows published before `publishedBeforeMs`; returns how many. Absent on
   * a source whose rows are the record itself (session-events' event store), which is never purged.
   */
  purgePublished?(publishedBeforeMs: number, limit: number): Promise<number>;
}

/** The generic outbox table for services whose events are not their source of truth. */
export const outboxMessageTable: Migration = {
  name: "0000_outbox_message",
  async up(db) {
    await db.schema.createTable("outbox_message", (t) => {
      t.increments("id").primary();
      t.string("topic", 200).notNullable();
      t.string("message_key", 200).notNullable();
      // BLOB is 64 KiB on MySQL; an event may be larger (a rules snapshot is up to 1 MiB).
      if (db.client.config.client === "mysql2") t.specificType("payload", "MEDIUMBLOB").notNullable();
      else t.binary("payload").notNullable();
      t.text("headers_json").notNullable();
      t.bigInteger("created_at_ms").notNullable();
      t.bigInteger("published_at_ms").nullable();
      t.index(["published_at_ms", "id"], "outbox_unpublished");
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists("outbox_message");
  },
};

/**
 * The relay lease slot of every outbox row (docs/decisions/relay-leases.md), stored at insert so
 * SQLite and MySQL agree on it without hashing in SQL. Unpublished rows get theirs here; published
 * ones keep 0, as no relay reads them again. Every service with the table lists it last.
 */
export const outboxMessageLeaseSlot: Migration = {
  name: "0000_outbox_message_lease_slot",
  async up(db) {
    await db.schema.alterTable("outbox_message", (t) => {
      t.smallint("lease_slot").notNullable().defaultTo(0);
      t.index(["published_at_ms", "lease_slot", "id"], "outbox_unpublished_by_slot");
    });
    await assignLeaseSlots(db, "outbox_message", "message_key");
  },
  async down(db) {
    await db.schema.alterTable("outbox_message", (t) => {
      t.dropIndex(["published_at_ms", "lease_slot", "id"], "outbox_unpublished_by_slot");
      t.dropColumn("lease_slot");
    });
  },
};

/**
 * Stamps the unpublished rows of `table` with the lease slot of their `keyColumn`: what a migration
 * adding a lease_slot column runs, since rows written before it carry the default. Few rows (the
 * relay's backlog), so one UPDATE per slot.
 */
export async function assignLeaseSlots(db: Knex, table: string, keyColumn: string): Promise<void> {
  const pending = (await db(table).whereNull("published_at_ms").select("id", keyColumn)) as Array<
    Record<string, unknown>
  >;
  const idsBySlot = new Map<number, number[]>();
  for (const row of pending) {
    const slot = relayLeaseSlot(String(row[keyColumn]));
    if (slot === 0) continue;
    idsBySlot.set(slot, [...(idsBySlot.get(slot) ?? []), Number(row.id)]);
  }
  for (const [slot, ids] of idsBySlot)
    for (let start = 0; start < ids.length; start += 500)
      await db(table)
        .whereIn("id", ids.slice(start, start + 500))
        .update({ lease_slot: slot });
}

export interface OutboxEntry {
  readonly topic: string;
  readonly key: string;
  readonly value: Uint8Array;
  readonly headers?: Readonly<Record<string, string>>;
  readonly nowMs: number;
}

/** Records a message in the caller's transaction: it is published if and only if the transaction commits. */
export async function enqueueOutboxMessage(trx: Knex | Knex.Transaction, entry: OutboxEntry): Promise<void> {
  await enqueueOutboxMessages(trx, [entry]);
}

const OUTBOX_COLUMNS = [
  "topic",
  "message_key",
  "payload",
  "headers_json",
  "created_at_ms",
  "published_at_ms",
  "lease_slot",
] as const;

function outboxValues(entry: OutboxEntry): unknown[] {
  return [
    entry.topic,
    entry.key,
    Buffer.from(entry.value),
    JSON.stringify(entry.headers ?? {}),
    entry.nowMs,
    null,
    relayLeaseSlot(entry.key),
  ];
}

/** The INSERT of enqueueOutboxMessages, for a caller that sends it with other statements (Sql.batch). */
export function outboxInsert(entries: readonly OutboxEntry[]): Statement {
  return {
    sql: `INSERT INTO outbox_message (${OUTBOX_COLUMNS.join(", ")}) VALUES ${valueRows(entries.length, OUTBOX_COLUMNS.length)}`,
    values: entries.flatMap(outboxValues),
  };
}

/**
 * outboxInsert that inserts only where `condition` holds (SQL over no table, e.g. a user variable
 * an earlier statement of the same batch set), so one round trip can both attempt a change and
 * publish it only if the change took. One statement per entry, so ids ascend in the given order.
 */
export function outboxInsertsWhere(entries: readonly OutboxEntry[], condition: string): Statement[] {
  const columns = OUTBOX_COLUMNS.join(", ");
  const placeholders = OUTBOX_COLUMNS.map(() => "?").join(", ");
  return entries.map((entry) => ({
    sql: `INSERT INTO outbox_message (${columns}) SELECT ${placeholders} FROM DUAL WHERE ${condition}`,
    values: outboxValues(entry),
  }));
}

/**
 * enqueueOutboxMessage for many, in one statement; rows keep the given order (ids ascend). Takes a
 * knex transaction or, on a hot path, the plain-SQL connection of an inSqlTransaction.
 */
export async function enqueueOutboxMessages(
  trx: Knex | Knex.Transaction | Sql,
  entries: readonly OutboxEntry[],
): Promise<void> {
  if (entries.length === 0) return;
  if ("dialect" in trx) {
    const insert = outboxInsert(entries);
    await trx.run(insert.sql, insert.values);
    return;
  }
  await trx("outbox_message").insert(
    entries.map((entry) => {
      const values = outboxValues(entry);
      return Object.fromEntries(OUTBOX_COLUMNS.map((column, index) => [column, values[index]]));
    }),
  );
}

const FETCH_UNPUBLISHED =
  "SELECT id, topic, message_key, payload, headers_json FROM outbox_message WHERE published_at_ms IS NULL";

interface UnpublishedRecord {
  readonly id: number | string;
  readonly topic: string;
  readonly message_key: string;
  readonly payload: Buffer;
  readonly headers_json: string;
}

export function tableOutboxSource(db: Knex): OutboxSource {
  return {
    name: "outbox_message",
    // Plain SQL on one pooled connection: the relay runs these for every batch of every service,
    // and knex's builder cost as much CPU as the driver (only the columns publishing needs are read).
    async fetchUnpublished(limit, slots) {
      // Ordered by id: writers of one key are serialised by their own row locks, so ids of one key
      // are in commit order even when ids of different keys commit out of order. A lease's rows go
      // slot by slot (its index's order): a key's rows are all in one slot.
      const everySlot = slots === undefined || slots.length >= RELAY_LEASE_SLOTS;
      const statement = everySlot
        ? `${FETCH_UNPUBLISHED} ORDER BY id ASC LIMIT ?`
        : `${FETCH_UNPUBLISHED} AND lease_slot IN (${slots.map(() => "?").join(", ")}) ORDER BY lease_slot ASC, id ASC LIMIT ?`;
      const rows = await withSql(db, (sql) =>
        sql.rows<UnpublishedRecord>(statement, everySlot ? [limit] : [...slots, limit]),
      );
      return rows.map((r) => ({
        id: Number(r.id),
        topic: String(r.topic),
        message: {
          key: String(r.message_key),
          value: new Uint8Array(r.payload),
          headers: JSON.parse(String(r.headers_json)) as Record<string, string>,
        },
      }));
    },
    async markPublished(ids, nowMs) {
      if (ids.length === 0) return;
      await withSql(db, (sql) =>
        sql.run(`UPDATE outbox_message SET published_at_ms = ? WHERE id IN (${ids.map(() => "?").join(", ")})`, [
          nowMs,
          ...ids,
        ]),
      );
    },
    async countUnpublished() {
      const row = await db("outbox_message").whereNull("published_at_ms").count({ n: "*" }).first();
      return Number(row?.n ?? 0);
    },
    async purgePublished(publishedBeforeMs, limit) {
      // Ids first (a plain read), then a delete of exactly those rows: a range delete over the
      // published_at_ms index would lock the gap new (unpublished) rows are inserted into on MariaDB.
      const rows = (await db("outbox_message")
        .where("published_at_ms", "<", publishedBeforeMs)
        .orderBy("published_at_ms", "asc")
        .limit(limit)
        .select("id")) as Array<{ id: number | string }>;
      if (rows.length === 0) return 0;
      return db("outbox_message")
        .whereIn(
          "id",
          rows.map((row) => Number(row.id)),
        )
        .andWhere("published_at_ms", "<", publishedBeforeMs)
        .delete();
    },
  };
}

interface OutboxRelayCommonOptions {
  readonly source: OutboxSource;
  readonly bus: MessageBus;
  readonly logger: Logger;
  readonly now?: () => number;
  readonly batchSize?: number;
  readonly idleDelayMs?: number;
  readonly errorDelayMs?: number;
  readonly onPublished?: (count: number) => void;
  /** Written on every message as the `pg-relay` header; default `<host>/<pid>`. */
  readonly publisherId?: string;
  /**
   * Published rows are deleted this long after publication (OUTBOX_RETENTION_MS); default 24 h.
   * They hold events as sent (content included), and a published row is never read again.
   */
  readonly retentionMs?: number;
  /** A purge pass runs at most this often; default 60 s. */
  readonly purgeIntervalMs?: number;
  /** Rows deleted per statement; default 1000. */
  readonly purgeBatchRows?: number;
  /** Statements per pass at most, so a large backlog never holds up publishing for long; default 100. */
  readonly purgeMaxBatches?: number;
  readonly onPurged?: (count: number) => void;
}

/**
 * One lock for the whole source (every row, one publisher at a time), or the source split over
 * leases (relay-locks.ts RelayLeases), each publishing its own slots under its own lock.
 */
export type OutboxRelayOptions = OutboxRelayCommonOptions &
  (
    | { readonly lock: RelayLock; readonly leases?: undefined }
    | { readonly leases: RelayLeases; readonly lock?: undefined }
  );

export const DEFAULT_OUTBOX_RETENTION_MS = 24 * 3600 * 1000;
export const DEFAULT_OUTBOX_PURGE_INTERVAL_MS = 60_000;

/**
 * The header naming the relay process that published a message. With one lock holder per lease at a
 * time, the publishers of one key form runs (A… then B…) and never interleave (of one partition too
 * when there is one lease); a reader can check that, and an operator can tell which replica was
 * publishing when.
 */
export const RELAY_PUBLISHER_HEADER = "pg-relay";

/** The publisher id of this process when none is given: `<host>/<pid>`. */
export function processPublisherId(): string {
  return `${hostname()}/${process.pid}`;
}

/** An outbox message as a relay publishes it: the same, with its publisher's `pg-relay` header. */
export function relayedMessage(message: OutgoingMessage, publisherId: string): OutgoingMessage {
  return { ...message, headers: { ...message.headers, [RELAY_PUBLISHER_HEADER]: publisherId } };
}

/** One relay loop: a lease's lock and the slots it publishes (undefined: every row). */
interface RelayLane {
  readonly lease: number;
  readonly lock: RelayLock;
  readonly slots: readonly number[] | undefined;
  /** Whether its lock was held at the last try. */
  held: boolean;
  wakeUp: (() => void) | undefined;
}

/**
 * Publishes unpublished rows in order and then marks them. A crash between the two republishes the
 * batch (consumers are idempotent): duplicates are possible, losses are not. While the broker is down
 * the rows wait in the table and writers are unaffected. Split over leases, it runs one loop per
 * lease, each publishing while it holds that lease's lock.
 */
export class OutboxRelay {
  private running = false;
  private loops: Promise<void>[] = [];
  private readonly lanes: readonly RelayLane[];
  private readonly now: () => number;
  private readonly publisherId: string;
  private lastPurgeAtMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: OutboxRelayOptions) {
    this.now = options.now ?? Date.now;
    this.publisherId = options.publisherId ?? processPublisherId();
    const { leases } = options;
    this.lanes =
      leases === undefined
        ? [{ lease: 0, lock: options.lock, slots: undefined, held: false, wakeUp: undefined }]
        : Array.from({ length: leases.count }, (_, lease) => ({
            lease,
            lock: leases.lock(lease),
            // One lease takes every slot: it reads the table as an unsplit relay does.
            slots: leases.count === 1 ? undefined : slotsOfLease(lease, leases.count),
            held: false,
            wakeUp: undefined,
          }));
  }

  /** Leases this process holds now (with a single lock, 1 or 0 as last tried). */
  leasesHeld(): number {
    return this.options.leases?.held() ?? (this.lanes[0]?.held === true ? 1 : 0);
  }

  /**
   * Publishes what is pending now, every lease's rows, whoever holds the locks; returns how many rows
   * were published. Throws if the bus fails.
   */
  async drainOnce(): Promise<number> {
    let published = 0;
    for (const lane of this.lanes) published += await this.drainLane(lane);
    return published;
  }

  private async drainLane(lane: RelayLane): Promise<number> {
    const { source, bus } = this.options;
    const rows = await source.fetchUnpublished(this.options.batchSize ?? 500, lane.slots);
    if (rows.length === 0) return 0;
    // One publish per topic, rows kept in fetched order: per-key order is preserved.
    const byTopic = new Map<string, OutboxRow[]>();
    for (const row of rows) {
      const list = byTopic.get(row.topic) ?? [];
      list.push(row);
      byTopic.set(row.topic, list);
    }
    for (const [topic, list] of byTopic) {
      await bus.publish(
        topic,
        list.map((r) => relayedMessage(r.message, this.publisherId)),
      );
      await source.markPublished(
        list.map((r) => r.id),
        this.now(),
      );
    }
    this.options.onPublished?.(rows.length);
    return rows.length;
  }

  /**
   * Deletes rows published more than retentionMs ago, unless a pass ran less than purgeIntervalMs
   * ago or the source keeps its rows (no purgePublished). Returns how many rows went.
   */
  async purgeIfDue(): Promise<number> {
    const { source } = this.options;
    if (source.purgePublished === undefined) return 0;
    const nowMs = this.now();
    if (nowMs - this.lastPurgeAtMs < (this.options.purgeIntervalMs ?? DEFAULT_OUTBOX_PURGE_INTERVAL_MS)) return 0;
    this.lastPurgeAtMs = nowMs;
    const before = nowMs - (this.options.retentionMs ?? DEFAULT_OUTBOX_RETENTION_MS);
    const batchRows = this.options.purgeBatchRows ?? 1_000;
    const maxBatches = this.options.purgeMaxBatches ?? 100;
    let purged = 0;
    for (let batch = 0; batch < maxBatches; batch++) {
      const removed = await source.purgePublished(before, batchRows);
      purged += removed;
      if (removed < batchRows) break;
    }
    if (purged > 0) this.options.onPurged?.(purged);
    return purged;
  }

  /**
   * Nudges the idle loops of the leases held, e.g. right after a write commits, so delivery latency is
   * not the poll interval. A lease held elsewhere is not retried for it: its holder polls.
   */
  notify(): void {
    for (const lane of this.lanes) if (lane.held) lane.wakeUp?.();
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loops = this.lanes.map((lane) => this.run(lane));
  }

  private pause(lane: RelayLane, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        lane.wakeUp = undefined;
        resolve();
      }
      lane.wakeUp = done;
    });
  }

  private async run(lane: RelayLane): Promise<void> {
    const { logger, source } = this.options;
    let failures = 0;
    while (this.running) {
      try {
        lane.held = await lane.lock.tryAcquire();
        if (!lane.held) {
          await this.pause(lane, this.options.errorDelayMs ?? 1_000);
          continue;
        }
        const published = await this.drainLane(lane);
        failures = 0;
        // Only lease 0's holder purges: one deleter per table, whatever the lease count.
        if (lane.lease === 0)
          await this.purgeIfDue().catch((error: unknown) =>
            logger.warn({ err: error, source: source.name }, "outbox purge failed; retried at the next interval"),
          );
        if (published === 0) await this.pause(lane, this.options.idleDelayMs ?? 100);
      } catch (error) {
        failures += 1;
        logger.warn(
          { err: error, source: source.name, lease: lane.lease, failures },
          "outbox relay could not publish; rows stay pending",
        );
        await sleep(Math.min((this.options.errorDelayMs ?? 500) * failures, 5_000));
      }
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    for (const lane of this.lanes) lane.wakeUp?.();
    await Promise.all(this.loops);
    for (const lane of this.lanes) {
      await lane.lock.release().catch(() => undefined);
      lane.held = false;
    }
    await this.options.leases?.close().catch(() => undefined);
  }
}
