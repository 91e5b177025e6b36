import { hostname } from "node:os";
import { type Migration, type Sql, type Statement, serverLockName, valueRows } from "@prefix-guard/db";
import type { Logger } from "@prefix-guard/logging";
import type { Knex } from "knex";
import { type MessageBus, type OutgoingMessage, sleep } from "./port";

/** One row waiting to be published. `id` identifies it for markPublished. */
export interface OutboxRow {
  readonly id: number;
  readonly topic: string;
  readonly message: OutgoingMessage;
}

/** Where a relay reads from: session-events' own event table, or the generic outbox table. */
export interface OutboxSource {
  readonly name: string;
  /** Unpublished rows, per key in write order. */
  fetchUnpublished(limit: number): Promise<OutboxRow[]>;
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

const OUTBOX_COLUMNS = ["topic", "message_key", "payload", "headers_json", "created_at_ms", "published_at_ms"] as const;

function outboxValues(entry: OutboxEntry): unknown[] {
  return [entry.topic, entry.key, Buffer.from(entry.value), JSON.stringify(entry.headers ?? {}), entry.nowMs, null];
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

export function tableOutboxSource(db: Knex): OutboxSource {
  return {
    name: "outbox_message",
    async fetchUnpublished(limit) {
      // Ordered by id: writers of one key are serialised by their own row locks, so ids of one key
      // are in commit order even when ids of different keys commit out of order.
      const rows = await db("outbox_message").whereNull("published_at_ms").orderBy("id", "asc").limit(limit);
      return rows.map((r) => ({
        id: Number(r.id),
        topic: String(r.topic),
        message: {
          key: String(r.message_key),
          value: new Uint8Array(r.payload as Buffer),
          headers: JSON.parse(String(r.headers_json)) as Record<string, string>,
        },
      }));
    },
    async markPublished(ids, nowMs) {
      if (ids.length > 0)
        await db("outbox_message")
          .whereIn("id", [...ids])
          .update({ published_at_ms: nowMs });
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

/** Exactly one active relay per source across instances. */
export interface RelayLock {
  /** True when this instance holds (or just acquired) the lock. */
  tryAcquire(): Promise<boolean>;
  release(): Promise<void>;
}

/**
 * MySQL GET_LOCK on a connection held for the relay's life: if the process dies, the server frees the
 * lock with the connection, and another instance takes over on its next attempt.
 */
export function mysqlRelayLock(db: Knex, lockName: string): RelayLock {
  let connection: unknown;
  return {
    async tryAcquire() {
      try {
        if (connection !== undefined) {
          const [rows] = (await db
            .raw("SELECT IS_USED_LOCK(?) = CONNECTION_ID() AS mine", [lockName])
            .connection(connection)) as [Array<{ mine: number | null }>];
          if (rows[0]?.mine === 1) return true;
          await db.client.releaseConnection(connection);
          connection = undefined;
        }
        connection = await db.client.acquireConnection();
        const [rows] = (await db.raw("SELECT GET_LOCK(?, 0) AS got", [lockName]).connection(connection)) as [
          Array<{ got: number | null }>,
        ];
        if (rows[0]?.got === 1) return true;
        await db.client.releaseConnection(connection);
        connection = undefined;
        return false;
      } catch {
        if (connection !== undefined)
          await Promise.resolve(db.client.releaseConnection(connection)).catch(() => undefined);
        connection = undefined;
        return false;
      }
    },
    async release() {
      if (connection === undefined) return;
      try {
        await db.raw("SELECT RELEASE_LOCK(?)", [lockName]).connection(connection);
      } finally {
        await db.client.releaseConnection(connection);
        connection = undefined;
      }
    },
  };
}

/** SQLite is single-process: the process is the only relay. */
export function processRelayLock(): RelayLock {
  return { tryAcquire: async () => true, release: async () => undefined };
}

/**
 * GET_LOCK names are server-wide: the database name is part of the lock, so two deployments (or a
 * test and a benchmark) sharing one MariaDB server never hold each other's relays.
 */
export function relayLockFor(db: Knex, lockName: string): RelayLock {
  if (db.client.config.client !== "mysql2") return processRelayLock();
  const database = String((db.client.config.connection as { database?: string } | undefined)?.database ?? "");
  return mysqlRelayLock(db, serverLockName(lockName, database));
}

export interface OutboxRelayOptions {
  readonly source: OutboxSource;
  readonly bus: MessageBus;
  readonly lock: RelayLock;
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

export const DEFAULT_OUTBOX_RETENTION_MS = 24 * 3600 * 1000;
export const DEFAULT_OUTBOX_PURGE_INTERVAL_MS = 60_000;

/**
 * The header naming the relay process that published a message. With one lock holder at a time, the
 * publishers of one partition form runs (A… then B…) and never interleave; a reader can check that,
 * and an operator can tell which replica was publishing when.
 */
export const RELAY_PUBLISHER_HEADER = "pg-relay";

/**
 * Publishes unpublished rows in order and then marks them. A crash between the two republishes the
 * batch (consumers are idempotent): duplicates are possible, losses are not. While the broker is down
 * the rows wait in the table and writers are unaffected.
 */
export class OutboxRelay {
  private running = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private readonly now: () => number;
  private readonly publisherId: string;
  private lastPurgeAtMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: OutboxRelayOptions) {
    this.now = options.now ?? Date.now;
    this.publisherId = options.publisherId ?? `${hostname()}/${process.pid}`;
  }

  /** Publishes what is pending now; returns how many rows were published. Throws if the bus fails. */
  async drainOnce(): Promise<number> {
    const { source, bus } = this.options;
    const rows = await source.fetchUnpublished(this.options.batchSize ?? 500);
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
        list.map((r) => ({
          ...r.message,
          headers: { ...r.message.headers, [RELAY_PUBLISHER_HEADER]: this.publisherId },
        })),
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

  /** Nudges an idle relay, e.g. right after a write commits, so delivery latency is not the poll interval. */
  notify(): void {
    this.wakeUp?.();
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.wakeUp = undefined;
        resolve();
      }
      this.wakeUp = done;
    });
  }

  private async run(): Promise<void> {
    const { lock, logger, source } = this.options;
    let failures = 0;
    while (this.running) {
      try {
        if (!(await lock.tryAcquire())) {
          await this.pause(this.options.errorDelayMs ?? 1_000);
          continue;
        }
        const published = await this.drainOnce();
        failures = 0;
        // Only the lock holder purges: one deleter per table, as one publisher.
        await this.purgeIfDue().catch((error: unknown) =>
          logger.warn({ err: error, source: source.name }, "outbox purge failed; retried at the next interval"),
        );
        if (published === 0) await this.pause(this.options.idleDelayMs ?? 100);
      } catch (error) {
        failures += 1;
        logger.warn({ err: error, source: source.name, failures }, "outbox relay could not publish; rows stay pending");
        await sleep(Math.min((this.options.errorDelayMs ?? 500) * failures, 5_000));
      }
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp?.();
    await this.loop;
    await this.options.lock.release().catch(() => undefined);
  }
}
