// The message bus port. Two implementations keep one contract (see bus-contract.ts):
// per-key order within a topic, at-least-once delivery, committed consumer positions that survive
// a restart, and a handler that is retried (never skipped) until it succeeds.

export interface OutgoingMessage {
  readonly key: string;
  readonly value: Uint8Array;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface IncomingMessage {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: string;
  readonly value: Uint8Array;
  readonly headers: Readonly<Record<string, string>>;
}

export interface TopicSpec {
  readonly topic: string;
  readonly partitions: number;
  readonly retentionMs?: number;
}

export interface SubscribeOptions {
  readonly topic: string;
  readonly groupId: string;
  /** Where a group with no committed position starts. Default true: a new consumer sees history. */
  readonly fromBeginning?: boolean;
  /**
   * Called one message at a time per partition, in offset order. Resolving commits the position;
   * throwing retries the same message after a backoff (the handler decides what is poison).
   * Ignored when handleBatch is given.
   */
  readonly handleMessage?: (message: IncomingMessage) => Promise<void>;
  /**
   * Called with consecutive messages of one partition, in offset order (at most maxBatchMessages).
   * Resolving commits the position past the last one; throwing retries the same batch after a
   * backoff, so the handler must be idempotent over a batch it saw before.
   */
  readonly handleBatch?: (messages: readonly IncomingMessage[]) => Promise<void>;
  /** Largest batch handed to handleBatch; default 500. */
  readonly maxBatchMessages?: number;
  /** Partitions processed at the same time by this subscriber; default 1. */
  readonly partitionsConcurrently?: number;
  /**
   * Kafka: how long a handled position may wait before it is committed to the broker (one commit
   * then carries every partition's); 0 commits after every batch handed to the handler. A crash
   * redelivers what was handled but not yet committed, so the handler must be idempotent anyway.
   * Default 0. The embedded bus commits its positions with each batch and ignores it.
   */
  readonly commitIntervalMs?: number;
  /**
   * Kafka: a fetch is answered once this many bytes are waiting or `fetchMaxWaitMs` has passed, so
   * a consumer that can wait takes fewer, larger batches. Default 1 (answered as soon as anything
   * is there). The embedded bus ignores it.
   */
  readonly fetchMinBytes?: number;
  /** Kafka: the longest a fetch waits for `fetchMinBytes`; default the bus's (250 ms). */
  readonly fetchMaxWaitMs?: number;
}

const DEFAULT_MAX_BATCH_MESSAGES = 500;

/**
 * What a subscription runs per step: handleBatch over up to maxBatchMessages, or handleMessage over
 * batches of one (so a retry never repeats a message that was already handled).
 */
export function batchHandlerOf(options: SubscribeOptions): {
  readonly handle: (messages: readonly IncomingMessage[]) => Promise<void>;
  readonly maxMessages: number;
} {
  if (options.handleBatch !== undefined) {
    return { handle: options.handleBatch, maxMessages: options.maxBatchMessages ?? DEFAULT_MAX_BATCH_MESSAGES };
  }
  const handleMessage = options.handleMessage;
  if (handleMessage === undefined) throw new Error(`subscription to ${options.topic} has no handler`);
  return {
    handle: async (messages) => {
      for (const message of messages) await handleMessage(message);
    },
    maxMessages: 1,
  };
}

export interface Subscription {
  stop(): Promise<void>;
}

export interface MessageBus {
  readonly kind: "kafka" | "embedded";
  ensureTopics(specs: readonly TopicSpec[]): Promise<void>;
  /** Resolves once every message is durably accepted, in the given order. */
  publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void>;
  subscribe(options: SubscribeOptions): Promise<Subscription>;
  close(): Promise<void>;
}

/** Retry pause for a failing handler: doubles up to a cap so a down dependency is not hammered. */
export function handlerBackoffMs(attempt: number): number {
  return Math.min(100 * 2 ** Math.min(attempt, 10), 5_000);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
