import { UnavailableError } from "@prefix-guard/errors";
import type { Logger } from "@prefix-guard/logging";
import {
  type Admin,
  type Consumer,
  type EachBatchPayload,
  Kafka,
  type KafkaConfig,
  logLevel,
  Partitioners,
  type Producer,
  type SASLOptions,
} from "kafkajs";
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

export interface KafkaBusOptions {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly logger: Logger;
  readonly connectionTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
  readonly replicationFactor?: number;
  readonly ssl?: boolean;
  readonly sasl?: SASLOptions;
  /** Consumer session timeout; must be within the broker's group.min/max.session.timeout.ms. */
  readonly sessionTimeoutMs?: number;
  readonly maxWaitTimeMs?: number;
}

function headersOf(
  raw: Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw ?? {})) {
    if (v !== undefined) headers[k] = Array.isArray(v) ? v.map((x) => x.toString()).join(",") : v.toString();
  }
  return headers;
}

// What kafkajs reports as errors on every normal start, while a consumer group forms or a topic that
// already exists is created again: retried by kafkajs itself, so only worth a debug line.
const START_UP_NOISE = [
  "The group coordinator is not available",
  "The coordinator is loading and hence can't process requests",
  "This is not the correct coordinator for this group",
  "There is no leader for this topic-partition as we are in the middle of a leadership election",
  "This server does not host this topic-partition",
];

export function kafkaLogLevel(
  level: number,
  message: string,
  extra: Readonly<Record<string, unknown>>,
): "error" | "warn" | "debug" {
  // kafkajs puts the broker's error text in `error` and the request in the message.
  const text = `${message} ${typeof extra.error === "string" ? extra.error : ""}`;
  if (START_UP_NOISE.some((noise) => text.includes(noise))) return "debug";
  // CreateTopics answering an error for a topic that exists (ensureTopics on every start); a real
  // creation failure reaches ensureTopics' caller as an exception.
  if (message.startsWith("Response CreateTopics") && extra.error === "Topic creation errors") return "debug";
  return level === logLevel.ERROR ? "error" : level === logLevel.WARN ? "warn" : "debug";
}

export function createKafkaBus(options: KafkaBusOptions): MessageBus {
  const { logger } = options;
  const config: KafkaConfig = {
    clientId: options.clientId,
    brokers: [...options.brokers],
    connectionTimeout: options.connectionTimeoutMs ?? 3_000,
    requestTimeout: options.requestTimeoutMs ?? 30_000,
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5_000 },
    logLevel: logLevel.WARN,
    logCreator: () => (entry) => {
      const { message, ...extra } = entry.log;
      const level = kafkaLogLevel(entry.level, message, extra);
      logger[level]({ kafkajs: entry.namespace, ...extra }, message);
    },
    ...(options.ssl !== undefined ? { ssl: options.ssl } : {}),
    ...(options.sasl !== undefined ? { sasl: options.sasl } : {}),
  };
  const kafka = new Kafka(config);
  let producer: Producer | undefined;
  let producerReady: Promise<Producer> | undefined;
  const consumers = new Set<Consumer>();

  function getProducer(): Promise<Producer> {
    producerReady ??= (async () => {
      // Idempotent, one request in flight, acks from all ISRs: the broker drops retried duplicates and
      // keeps order (kafkajs cannot re-sequence with more in flight: kafkajs#980, #598).
      const p = kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      try {
        await p.connect();
      } catch (error) {
        producerReady = undefined;
        throw new UnavailableError("kafka producer cannot connect", { cause: error });
      }
      producer = p;
      return p;
    })();
    return producerReady;
  }

  async function withAdmin<T>(work: (admin: Admin) => Promise<T>): Promise<T> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      return await work(admin);
    } finally {
      await admin.disconnect();
    }
  }

  return {
    kind: "kafka",
    async ensureTopics(specs: readonly TopicSpec[]) {
      await withAdmin(async (admin) => {
        const existing = new Set(await admin.listTopics());
        const missing = specs.filter((s) => !existing.has(s.topic));
        if (missing.length === 0) return;
        await admin.createTopics({
          waitForLeaders: true,
          topics: missing.map((s) => ({
            topic: s.topic,
            numPartitions: s.partitions,
            replicationFactor: options.replicationFactor ?? 1,
            configEntries: s.retentionMs === undefined ? [] : [{ name: "retention.ms", value: String(s.retentionMs) }],
          })),
        });
      });
    },
    async publish(topic: string, messages: readonly OutgoingMessage[]) {
      if (messages.length === 0) return;
      const p = await getProducer();
      try {
        await p.send({
          topic,
          acks: -1,
          timeout: options.requestTimeoutMs ?? 30_000,
          messages: messages.map((m) => ({
            key: m.key,
            value: Buffer.from(m.value.buffer, m.value.byteOffset, m.value.byteLength),
            headers: { ...(m.headers ?? {}) },
          })),
        });
      } catch (error) {
        // A fresh producer (new producer id) after a failure: kafkajs cannot re-sequence an idempotent
        // producer whose batches were lost with a broker, so reusing it can wedge the relay.
        producerReady = undefined;
        producer = undefined;
        await p.disconnect().catch(() => undefined);
        throw new UnavailableError(`kafka publish to ${topic} failed`, { cause: error, context: { topic } });
      }
    },
    async subscribe(opts: SubscribeOptions): Promise<Subscription> {
      const consumer = kafka.consumer({
        groupId: opts.groupId,
        sessionTimeout: options.sessionTimeoutMs ?? 10_000,
        heartbeatInterval: 1_000,
        maxWaitTimeInMs: opts.fetchMaxWaitMs ?? options.maxWaitTimeMs ?? 250,
        minBytes: opts.fetchMinBytes ?? 1,
        retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 300, maxRetryTime: 10_000 },
      });
      consumers.add(consumer);
      let running = true;
      const joined = new Promise<void>((resolve) => {
        consumer.on(consumer.events.GROUP_JOIN, () => resolve());
      });
      await consumer.connect();
      await consumer.subscribe({ topic: opts.topic, fromBeginning: opts.fromBeginning ?? true });
      const handler = batchHandlerOf(opts);
      const commits = new PositionCommits(
        (offsets) => consumer.commitOffsets(offsets),
        opts.commitIntervalMs ?? 0,
        (error) =>
          logger.warn({ err: error, groupId: opts.groupId }, "offset commit failed; the events are redelivered"),
      );
      // Positions handled before a rebalance belong to whoever owns the partitions now: committing them
      // later could move a new owner's position back.
      consumer.on(consumer.events.GROUP_JOIN, () => commits.forget());
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: opts.partitionsConcurrently ?? 1,
        eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload) => {
          const alive = () => running && isRunning() && !isStale();
          for (let start = 0; start < batch.messages.length && alive(); start += handler.maxMessages) {
            const chunk = batch.messages.slice(start, start + handler.maxMessages).map(
              (m): IncomingMessage => ({
                topic: batch.topic,
                partition: batch.partition,
                offset: m.offset,
                key: m.key?.toString() ?? "",
                value: m.value
                  ? new Uint8Array(m.value.buffer, m.value.byteOffset, m.value.byteLength)
                  : new Uint8Array(),
                headers: headersOf(m.headers),
              }),
            );
            let handled = false;
            for (let attempt = 0; alive(); attempt++) {
              try {
                await handler.handle(chunk);
                handled = true;
                break;
              } catch (error) {
                logger.warn(
                  {
                    err: error,
                    topic: batch.topic,
                    partition: batch.partition,
                    offset: chunk[0]?.offset,
                    messages: chunk.length,
                    groupId: opts.groupId,
                    attempt,
                  },
                  "handler failed; retrying the same messages",
                );
                await sleep(handlerBackoffMs(attempt));
                await heartbeat();
              }
            }
            if (!handled) break;
            const last = chunk[chunk.length - 1]?.offset;
            if (last === undefined) continue;
            resolveOffset(last);
            // kafkajs commitOffsetsIfNecessary commits nothing with autoCommit off (kafkajs#1729): commit explicitly.
            await commits.handled(batch.topic, batch.partition, (BigInt(last) + 1n).toString());
            try {
              await heartbeat();
            } catch (error) {
              // A rebalance is starting: what this member handled is committed while it still may.
              await commits.flush();
              throw error;
            }
          }
        },
      });
      await Promise.race([joined, sleep(30_000)]);
      return {
        async stop() {
          running = false;
          await commits.flush();
          commits.forget();
          await consumer.disconnect();
          consumers.delete(consumer);
        },
      };
    },
    async close() {
      await Promise.allSettled([...consumers].map((c) => c.disconnect()));
      consumers.clear();
      if (producer) await producer.disconnect();
      producer = undefined;
      producerReady = undefined;
    },
  };
}

type CommitOffsets = (offsets: { topic: string; partition: number; offset: string }[]) => Promise<void>;

/**
 * A consumer's handled positions, committed to the broker at most once per interval. Each commit is
 * a round trip the broker writes to __consumer_offsets; one per batch was about one commit per four
 * events at a few hundred events/s. Positions are still committed only after their batch was handled.
 */
export class PositionCommits {
  private readonly pending = new Map<string, { topic: string; partition: number; offset: string }>();
  private lastCommitAt = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly commit: CommitOffsets,
    private readonly intervalMs: number,
    private readonly failed: (error: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** A batch up to `offset` (the next offset to read) was handled. */
  async handled(topic: string, partition: number, offset: string): Promise<void> {
    this.pending.set(`${topic}\u0000${partition}`, { topic, partition, offset });
    if (this.now() - this.lastCommitAt >= this.intervalMs) {
      await this.flush();
      return;
    }
    // A partition that goes quiet still gets its position committed, one interval later.
    this.timer ??= setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Commits every pending position now; a failure is reported, and those events are redelivered. */
  async flush(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.pending.size === 0) return;
    const offsets = [...this.pending.values()];
    this.pending.clear();
    this.lastCommitAt = this.now();
    try {
      await this.commit(offsets);
    } catch (error) {
      this.failed(error);
    }
  }

  /** Drops what was not committed (after a rebalance, or once stopped). */
  forget(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.pending.clear();
  }

  /** Positions handled and not yet committed (tests). */
  get pendingCount(): number {
    return this.pending.size;
  }
}
