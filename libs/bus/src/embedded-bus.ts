import { EventEmitter } from "node:events";
import type { Migration } from "@prefix-guard/db";
import type { Logger } from "@prefix-guard/logging";
import type { Knex } from "knex";
import { partitionForKey } from "./partition";
import {
  batchHandlerOf,
  handlerBackoffMs,
  type IncomingMessage,
  type MessageBus,
  type OutgoingMessage,
  type SubscribeOptions,
  type Subscription,
  sleep,
  type TopicSpec,
} from "./port";

/**
 * The embedded transport's log lives in a database (SQLite in `make run`), not in memory: a message
 * the relay marked as published must still reach its consumers after a crash, or the outbox's
 * "never lose" would end at the process boundary.
 */
export const embeddedBusMigrations: readonly Migration[] = [
  {
    name: "0001_bus_log",
    async up(db) {
      await db.schema.createTable("bus_topic", (t) => {
        t.string("topic", 200).primary();
        t.integer("partitions").notNullable();
        t.bigInteger("retention_ms").notNullable();
      });
      await db.schema.createTable("bus_partition", (t) => {
        t.string("topic", 200).notNullable();
        t.integer("partition").notNullable();
        t.bigInteger("next_offset").notNullable();
        t.primary(["topic", "partition"]);
      });
      await db.schema.createTable("bus_message", (t) => {
        t.string("topic", 200).notNullable();
        t.integer("partition").notNullable();
        t.bigInteger("offset").notNullable();
        t.string("message_key", 200).notNullable();
        if (db.client.config.client === "mysql2") t.specificType("value", "MEDIUMBLOB").notNullable();
        else t.binary("value").notNullable();
        t.text("headers_json").notNullable();
        t.bigInteger("created_at_ms").notNullable();
        t.primary(["topic", "partition", "offset"]);
      });
      await db.schema.createTable("bus_group_offset", (t) => {
        t.string("group_id", 200).notNullable();
        t.string("topic", 200).notNullable();
        t.integer("partition").notNullable();
        t.bigInteger("next_offset").notNullable();
        t.primary(["group_id", "topic", "partition"]);
      });
    },
    async down(db) {
      for (const table of ["bus_group_offset", "bus_message", "bus_partition", "bus_topic"])
        await db.schema.dropTableIfExists(table);
    },
  },
];

export interface EmbeddedBusOptions {
  readonly db: Knex;
  readonly logger: Logger;
  readonly now?: () => number;
  /** Fallback poll when no in-process publish woke the consumer (e.g. another process wrote). */
  readonly pollIntervalMs?: number;
  readonly batchSize?: number;
  readonly defaultRetentionMs?: number;
  /** How often the log is pruned (BUS_PRUNE_INTERVAL_MS); default 60 s, 0 never prunes. */
  readonly pruneIntervalMs?: number;
  /**
   * Longest a message is kept whatever its topic's retention says (BUS_RETENTION_MS); default 7 days.
   * The log holds users' content (schema 1 events) and must not keep it forever.
   */
  readonly maxRetentionMs?: number;
  /** Told after each scheduled prune how many messages it removed. */
  readonly onPruned?: (removed: number) => void;
}

const DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000;
export const DEFAULT_PRUNE_INTERVAL_MS = 60_000;
export const DEFAULT_MAX_RETENTION_MS = DEFAULT_RETENTION_MS;
/** Messages deleted per statement: a prune never holds SQLite's single connection for long. */
const PRUNE_BATCH_ROWS = 1_000;

export function createEmbeddedBus(options: EmbeddedBusOptions): MessageBus {
  const { db, logger } = options;
  const now = options.now ?? Date.now;
  const pollIntervalMs = options.pollIntervalMs ?? 200;
  const batchSize = options.batchSize ?? 200;
  const wake = new EventEmitter();
  wake.setMaxListeners(0);
  const topicPartitions = new Map<string, number>();
  const active = new Set<EmbeddedSubscription>();
  let closed = false;

  // Pruning runs on a timer for the bus's life; unref'd, so an idle bus never keeps a process alive.
  const pruneIntervalMs = options.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS;
  let pruning: Promise<void> | undefined;
  const pruneTimer =
    pruneIntervalMs > 0
      ? setInterval(() => {
          if (pruning !== undefined || closed) return;
          pruning = pruneEmbeddedLog(db, now(), { maxRetentionMs: options.maxRetentionMs ?? DEFAULT_MAX_RETENTION_MS })
            .then(
              (removed) => options.onPruned?.(removed),
              (error: unknown) =>
                logger.warn({ err: error }, "embedded log prune failed; retried at the next interval"),
            )
            .finally(() => {
              pruning = undefined;
            });
        }, pruneIntervalMs)
      : undefined;
  pruneTimer?.unref();

  async function partitionsOf(topic: string): Promise<number> {
    const cached = topicPartitions.get(topic);
    if (cached !== undefined) return cached;
    const row = await db("bus_topic").where({ topic }).first("partitions");
    if (!row) throw new Error(`topic ${topic} does not exist (ensureTopics first; auto-creation is off)`);
    topicPartitions.set(topic, Number(row.partitions));
    return Number(row.partitions);
  }

  class EmbeddedSubscription implements Subscription {
    private running = true;
    private readonly loops: Promise<void>[] = [];
    private readonly handler: ReturnType<typeof batchHandlerOf>;
    constructor(
      readonly opts: SubscribeOptions,
      partitions: number,
    ) {
      this.handler = batchHandlerOf(opts);
      for (let p = 0; p < partitions; p++) this.loops.push(this.consumePartition(p));
    }

    private async startOffset(partition: number): Promise<number> {
      const row = await db("bus_group_offset")
        .where({ group_id: this.opts.groupId, topic: this.opts.topic, partition })
        .first("next_offset");
      if (row) return Number(row.next_offset);
      if (this.opts.fromBeginning ?? true) {
        const min = await db("bus_message").where({ topic: this.opts.topic, partition }).min({ m: "offset" }).first();
        return min?.m === null || min?.m === undefined ? 0 : Number(min.m);
      }
      const part = await db("bus_partition").where({ topic: this.opts.topic, partition }).first("next_offset");
      return part ? Number(part.next_offset) : 0;
    }

    private waitForWork(): Promise<void> {
      return new Promise((resolve) => {
        const timer = setTimeout(done, pollIntervalMs);
        function done() {
          clearTimeout(timer);
          wake.off("publish", done);
          resolve();
        }
        wake.on("publish", done);
      });
    }

    private async consumePartition(partition: number): Promise<void> {
      const { topic, groupId } = this.opts;
      let next = await this.startOffset(partition);
      while (this.running) {
        const rows = await db("bus_message")
          .where({ topic, partition })
          .andWhere("offset", ">=", next)
          .orderBy("offset", "asc")
          .limit(batchSize);
        if (rows.length === 0) {
          await this.waitForWork();
          continue;
        }
        const messages = rows.map(
          (row): IncomingMessage => ({
            topic,
            partition,
            offset: String(row.offset),
            key: String(row.message_key),
            value: new Uint8Array(row.value as Buffer),
            headers: JSON.parse(String(row.headers_json)) as Record<string, string>,
          }),
        );
        for (let start = 0; start < messages.length; start += this.handler.maxMessages) {
          if (!this.running) return;
          const chunk = messages.slice(start, start + this.handler.maxMessages);
          for (let attempt = 0; this.running; attempt++) {
            try {
              await this.handler.handle(chunk);
              break;
            } catch (error) {
              logger.warn(
                { err: error, topic, partition, offset: chunk[0]?.offset, messages: chunk.length, groupId, attempt },
                "handler failed; retrying the same messages",
              );
              await sleep(handlerBackoffMs(attempt));
            }
          }
          if (!this.running) return;
          next = Number(chunk[chunk.length - 1]?.offset ?? next - 1) + 1;
          await db("bus_group_offset")
            .insert({ group_id: groupId, topic, partition, next_offset: next })
            .onConflict(["group_id", "topic", "partition"])
            .merge(["next_offset"]);
        }
      }
    }

    async stop(): Promise<void> {
      this.running = false;
      wake.emit("publish");
      await Promise.allSettled(this.loops);
      active.delete(this);
    }
  }

  return {
    kind: "embedded",
    async ensureTopics(specs: readonly TopicSpec[]) {
      // At start (openBus ensures the topics first): every later delete of the log zeroes its bytes.
      await useSecureDelete(db);
      for (const spec of specs) {
        await db.transaction(async (trx) => {
          const existing = await trx("bus_topic").where({ topic: spec.topic }).first();
          if (existing) return;
          await trx("bus_topic").insert({
            topic: spec.topic,
            partitions: spec.partitions,
            retention_ms: spec.retentionMs ?? options.defaultRetentionMs ?? DEFAULT_RETENTION_MS,
          });
          for (let p = 0; p < spec.partitions; p++)
            await trx("bus_partition").insert({ topic: spec.topic, partition: p, next_offset: 0 });
        });
      }
    },
    async publish(topic: string, messages: readonly OutgoingMessage[]) {
      if (closed) throw new Error("bus is closed");
      if (messages.length === 0) return;
      const partitions = await partitionsOf(topic);
      const createdAt = now();
      await db.transaction(async (trx) => {
        for (const message of messages) {
          const partition = partitionForKey(message.key, partitions);
          const part = await trx("bus_partition").where({ topic, partition }).first("next_offset");
          const offset = Number(part?.next_offset ?? 0);
          await trx("bus_message").insert({
            topic,
            partition,
            offset,
            message_key: message.key,
            value: Buffer.from(message.value),
            headers_json: JSON.stringify(message.headers ?? {}),
            created_at_ms: createdAt,
          });
          await trx("bus_partition")
            .where({ topic, partition })
            .update({ next_offset: offset + 1 });
        }
      });
      wake.emit("publish");
    },
    async subscribe(opts: SubscribeOptions) {
      const partitions = await partitionsOf(opts.topic);
      for (const sub of active) {
        if (sub.opts.groupId === opts.groupId && sub.opts.topic === opts.topic) {
          throw new Error(`group ${opts.groupId} already consumes ${opts.topic} in this process`);
        }
      }
      const subscription = new EmbeddedSubscription(opts, partitions);
      active.add(subscription);
      return subscription;
    },
    async close() {
      closed = true;
      if (pruneTimer !== undefined) clearInterval(pruneTimer);
      await pruning;
      await Promise.all([...active].map((s) => s.stop()));
    },
  };
}

function isSqlite(db: Knex): boolean {
  return db.client.config.client !== "mysql2";
}

/**
 * SQLite keeps a deleted row's bytes in the page's free space until something overwrites them;
 * secure_delete zeroes them at the delete. Per connection: set on the embedded bus's one connection
 * at start and again before every prune (a connection the pool replaced starts without it).
 */
async function useSecureDelete(db: Knex): Promise<void> {
  if (isSqlite(db)) await db.raw("PRAGMA secure_delete = ON");
}

/**
 * Drops messages older than their topic's retention, or than `maxRetentionMs` when that is shorter,
 * so the embedded log stays bounded and a user's content does not outlive it. Deletes in batches of
 * PRUNE_BATCH_ROWS per statement, with SQLite's secure_delete on; after removing anything on SQLite,
 * the write-ahead log is checkpointed and truncated, so the removed bytes are in no file.
 */
export async function pruneEmbeddedLog(
  db: Knex,
  nowMs: number,
  options: { readonly maxRetentionMs?: number; readonly batchRows?: number } = {},
): Promise<number> {
  const batchRows = options.batchRows ?? PRUNE_BATCH_ROWS;
  await useSecureDelete(db);
  const topics = await db("bus_topic").select("topic", "partitions", "retention_ms");
  let removed = 0;
  for (const t of topics) {
    const retentionMs = Math.min(Number(t.retention_ms), options.maxRetentionMs ?? Number.POSITIVE_INFINITY);
    const before = nowMs - retentionMs;
    for (let partition = 0; partition < Number(t.partitions); partition++) {
      for (;;) {
        // Oldest first along the primary key; the delete then names exact rows (no range locks).
        const rows = (await db("bus_message")
          .where({ topic: t.topic, partition })
          .andWhere("created_at_ms", "<", before)
          .orderBy("offset", "asc")
          .limit(batchRows)
          .select("offset")) as Array<{ offset: number | string }>;
        if (rows.length === 0) break;
        removed += await db("bus_message")
          .where({ topic: t.topic, partition })
          .whereIn(
            "offset",
            rows.map((row) => Number(row.offset)),
          )
          .delete();
        if (rows.length < batchRows) break;
      }
    }
  }
  if (removed > 0 && isSqlite(db)) await db.raw("PRAGMA wal_checkpoint(TRUNCATE)");
  return removed;
}
