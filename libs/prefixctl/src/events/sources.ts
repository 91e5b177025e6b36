// Where `prefixctl events tail` reads records: a Kafka cluster, or the embedded transport's log
// under `make run`. Both only read: the Kafka consumer is in a group of its own that never commits
// (so no subscriber's position moves), and the embedded log is opened read-only.
//
// The embedded transport has no network surface: its services run in the `make run` process and its
// log is a SQLite file (`.data/bus.sqlite`, written by libs/bus embedded-bus.ts in WAL mode, which
// lets another process read while it writes). Reading that file is the smallest way in that changes
// nothing: no endpoint to secure, nothing the launcher has to serve, and it works while the system
// is stopped too. Its tables are embeddedBusMigrations' (bus_topic, bus_partition, bus_message).

import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { Kafka, logLevel } from "kafkajs";
import type { EventSource } from "./args";
import type { TailRecord } from "./records";

export interface TailOptions {
  readonly topics: readonly string[];
  readonly fromBeginning: boolean;
  /** Called for each record, one at a time, in offset order per partition. */
  readonly onRecord: (record: TailRecord) => void;
  /** Called once the start positions are fixed: every record published from then on is shown. */
  readonly onReady: () => void;
  /** Reading stops, and tail() resolves, when this aborts (Ctrl-C / SIGTERM). */
  readonly signal: AbortSignal;
}

/** Why a tail could not start or went on: `usage` when the operator named something that is not there. */
export class TailError extends Error {
  constructor(
    message: string,
    readonly usage = false,
  ) {
    super(message);
    this.name = "TailError";
  }
}

/** Resolves when the signal aborts (at once if it already has). */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

export function tail(source: EventSource, options: TailOptions): Promise<void> {
  return source.kind === "kafka" ? tailKafka(source.brokers, options) : tailEmbedded(source.file, options);
}

function headerText(raw: Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined) {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw ?? {})) {
    if (value !== undefined)
      headers[name] = Array.isArray(value) ? value.map((part) => part.toString()).join(",") : value.toString();
  }
  return headers;
}

async function tailKafka(brokers: readonly string[], options: TailOptions): Promise<void> {
  const { topics, fromBeginning, signal } = options;
  const kafka = new Kafka({
    clientId: "prefixctl-events-tail",
    brokers: [...brokers],
    connectionTimeout: 3_000,
    retry: { retries: 3, initialRetryTime: 200, maxRetryTime: 2_000 },
    // Failures reach the operator as one line from us, not as kafkajs' JSON logs.
    logLevel: logLevel.NOTHING,
  });
  // The start positions, read before subscribing: "from now" is then exact, not whenever the group
  // happens to finish joining.
  const admin = kafka.admin();
  const starts: { topic: string; partition: number; offset: string }[] = [];
  try {
    await admin.connect();
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((topic) => !existing.has(topic));
    if (missing.length > 0)
      throw new TailError(`topic ${missing.join(", ")} does not exist on ${brokers.join(",")}`, true);
    for (const topic of topics) {
      for (const { partition, high, low } of await admin.fetchTopicOffsets(topic))
        starts.push({ topic, partition, offset: fromBeginning ? low : high });
    }
  } catch (error) {
    if (error instanceof TailError) throw error;
    throw new TailError(`cannot read from Kafka at ${brokers.join(",")}: ${(error as Error).message}`);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  if (signal.aborted) return;

  // A group of its own that never commits: nobody else's position moves, and it leaves nothing behind.
  const consumer = kafka.consumer({ groupId: `prefixctl-tail-${randomUUID()}`, allowAutoTopicCreation: false });
  const crashed = new Promise<never>((_, reject) => {
    consumer.on(consumer.events.CRASH, (event) => {
      if (!event.payload.restart) reject(new TailError(`Kafka consumer stopped: ${event.payload.error.message}`));
    });
  });
  crashed.catch(() => undefined);
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [...topics], fromBeginning });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ topic, partition, message }) => {
        options.onRecord({
          topic,
          partition,
          offset: message.offset,
          key: message.key?.toString() ?? "",
          value: message.value === null ? new Uint8Array() : new Uint8Array(message.value),
          headers: headerText(message.headers),
        });
      },
    });
    for (const start of starts) consumer.seek(start);
    options.onReady();
    await Promise.race([aborted(signal), crashed]);
  } catch (error) {
    if (error instanceof TailError) throw error;
    throw new TailError(`cannot read from Kafka at ${brokers.join(",")}: ${(error as Error).message}`);
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
}

const EMBEDDED_POLL_MS = 200;
const EMBEDDED_BATCH = 500;

interface BusMessageRow {
  readonly offset: number | bigint;
  readonly message_key: string;
  readonly value: Buffer;
  readonly headers_json: string;
}

async function tailEmbedded(file: string, options: TailOptions): Promise<void> {
  const { topics, fromBeginning, signal } = options;
  if (!existsSync(file))
    throw new TailError(`${file} does not exist (make run keeps its embedded log in .data/bus.sqlite)`, true);
  // Loaded here, not at the top: a Kafka-only install of prefixctl needs no native SQLite addon.
  const { default: Database } = await import("better-sqlite3");
  let db: InstanceType<typeof Database>;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true, timeout: 5_000 });
  } catch (error) {
    throw new TailError(`cannot open ${file} read-only: ${(error as Error).message}`, true);
  }
  try {
    const positions: { topic: string; partition: number; next: number }[] = [];
    try {
      const partitionsOf = db.prepare<[string], { partitions: number }>(
        "SELECT partitions FROM bus_topic WHERE topic = ?",
      );
      const first = db.prepare<[string, number], { m: number | null }>(
        'SELECT MIN("offset") AS m FROM bus_message WHERE topic = ? AND partition = ?',
      );
      const end = db.prepare<[string, number], { next_offset: number }>(
        "SELECT next_offset FROM bus_partition WHERE topic = ? AND partition = ?",
      );
      for (const topic of topics) {
        const row = partitionsOf.get(topic);
        if (row === undefined) throw new TailError(`topic ${topic} is not in the embedded log ${file}`, true);
        for (let partition = 0; partition < row.partitions; partition++) {
          const next = fromBeginning
            ? Number(first.get(topic, partition)?.m ?? 0)
            : Number(end.get(topic, partition)?.next_offset ?? 0);
          positions.push({ topic, partition, next });
        }
      }
    } catch (error) {
      if (error instanceof TailError) throw error;
      throw new TailError(
        `${file} is not an embedded log (make run's .data/bus.sqlite): ${(error as Error).message}`,
        true,
      );
    }
    const read = db.prepare<[string, number, number, number], BusMessageRow>(
      'SELECT "offset", message_key, value, headers_json FROM bus_message WHERE topic = ? AND partition = ? AND "offset" >= ? ORDER BY "offset" LIMIT ?',
    );
    options.onReady();
    while (!signal.aborted) {
      let found = 0;
      for (const position of positions) {
        const rows = read.all(position.topic, position.partition, position.next, EMBEDDED_BATCH);
        for (const row of rows) {
          options.onRecord({
            topic: position.topic,
            partition: position.partition,
            offset: String(row.offset),
            key: row.message_key,
            value: new Uint8Array(row.value),
            headers: JSON.parse(row.headers_json) as Record<string, string>,
          });
          position.next = Number(row.offset) + 1;
        }
        found += rows.length;
      }
      if (found === 0) await pause(EMBEDDED_POLL_MS, signal);
    }
  } finally {
    db.close();
  }
}
