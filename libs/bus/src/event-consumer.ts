import { type Context, context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { errorMessage, ValidationError } from "@prefix-guard/errors";
import type { Logger } from "@prefix-guard/logging";
import { ApplyGroups } from "./apply-groups";
import type { IncomingMessage, MessageBus, Subscription } from "./port";

/** Thrown by an apply function for an event that can never be applied (wrong shape, unknown version). */
export class PoisonMessageError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PoisonMessageError";
  }
}

export interface EventConsumerOptions<E> {
  readonly bus: MessageBus;
  readonly topic: string;
  readonly groupId: string;
  readonly logger: Logger;
  /** Bytes to event; a ValidationError marks the message as poison. */
  readonly decode: (value: Uint8Array) => E;
  /**
   * Applies decoded events of one partition, in offset order, as one unit of work (one transaction,
   * say). Throwing a PoisonMessageError or ValidationError makes the consumer apply the events one
   * at a time, so only the poison one goes to the DLQ; any other error retries the whole batch.
   */
  readonly apply: (events: readonly E[], messages: readonly IncomingMessage[]) => Promise<void>;
  /** Events per apply call at most; default 500. */
  readonly maxBatchEvents?: number;
  /** Partitions applied at the same time; default 1. */
  readonly partitionsConcurrently?: number;
  /**
   * Batches of several partitions handed over together are applied in one `apply` call
   * (apply-groups.ts), up to maxBatchEvents: for an apply that is one transaction whatever its size.
   * `apply` then gets events of several partitions, each partition's in offset order. Default false.
   */
  readonly applyPartitionsTogether?: boolean;
  /** A consumer that can wait for larger batches (SubscribeOptions.fetchMinBytes, fetchMaxWaitMs). */
  readonly fetchMinBytes?: number;
  readonly fetchMaxWaitMs?: number;
  /** How long an applied position may wait to be committed (SubscribeOptions.commitIntervalMs); default 0. */
  readonly commitIntervalMs?: number;
  /** Largest accepted message; bigger ones go to the DLQ unread (bounded memory per message). */
  readonly maxMessageBytes?: number;
  readonly fromBeginning?: boolean;
  readonly onOutcome?: (outcome: "applied" | "dead_lettered", count: number) => void;
}

const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/** Links on a batch span: enough to find the producers, bounded so a span stays small. */
const MAX_SPAN_LINKS = 32;

function extractContext(headers: Readonly<Record<string, string>>): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

/**
 * Decodes and applies each message of a topic. Undecodable, oversized and poison messages go to
 * `<topic>.dlq` with the reason in headers and consumption continues; any other failure is retried
 * by the bus on the same message, so a dependency outage delays events and never drops them.
 */
export async function runEventConsumer<E>(options: EventConsumerOptions<E>): Promise<Subscription> {
  const { bus, topic, groupId, logger } = options;
  const tracer = trace.getTracer("prefix-guard.bus");
  const maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const deadLetterTopic = `${topic}.dlq`;

  async function deadLetter(message: IncomingMessage, reason: string, error: unknown): Promise<void> {
    logger.warn(
      { topic, partition: message.partition, offset: message.offset, key: message.key, reason, err: error },
      "message sent to DLQ",
    );
    await bus.publish(deadLetterTopic, [
      {
        key: message.key,
        value: message.value,
        headers: {
          ...message.headers,
          "pg-dlq-reason": reason,
          "pg-dlq-error": errorMessage(error).slice(0, 500),
          "pg-dlq-source": `${message.topic}/${message.partition}/${message.offset}`,
          "pg-dlq-group": groupId,
        },
      },
    ]);
    options.onOutcome?.("dead_lettered", 1);
  }

  function isPoison(error: unknown): boolean {
    return error instanceof PoisonMessageError || error instanceof ValidationError;
  }

  /** Applies `batch` under one consumer span linked to every message's producer context. */
  async function applyTraced(batch: readonly { event: E; message: IncomingMessage }[]): Promise<void> {
    const first = batch[0];
    if (first === undefined) return;
    const links = batch.slice(0, MAX_SPAN_LINKS).flatMap(({ message }) => {
      const spanContext = trace.getSpanContext(extractContext(message.headers));
      return spanContext === undefined ? [] : [{ context: spanContext }];
    });
    // A batch of one keeps its producer as parent, so a single write is one trace end to end.
    const parent = batch.length === 1 ? extractContext(first.message.headers) : ROOT_CONTEXT;
    await context.with(parent, () =>
      tracer.startActiveSpan(
        `${topic} process`,
        {
          kind: SpanKind.CONSUMER,
          links,
          attributes: {
            "messaging.system": bus.kind,
            "messaging.destination.name": topic,
            "messaging.consumer.group.name": groupId,
            "messaging.batch.message_count": batch.length,
            ...(batch.length === 1 ? { "messaging.kafka.message.key": first.message.key } : {}),
          },
        },
        async (span) => {
          try {
            await options.apply(
              batch.map((item) => item.event),
              batch.map((item) => item.message),
            );
            options.onOutcome?.("applied", batch.length);
          } catch (error) {
            span.recordException(error as Error);
            span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
            throw error;
          } finally {
            span.end();
          }
        },
      ),
    );
  }

  const maxBatchEvents = options.maxBatchEvents ?? 500;
  const groups = options.applyPartitionsTogether === true ? new ApplyGroups(applyTraced, maxBatchEvents) : undefined;

  return bus.subscribe({
    topic,
    groupId,
    ...(options.fromBeginning !== undefined ? { fromBeginning: options.fromBeginning } : {}),
    maxBatchMessages: maxBatchEvents,
    partitionsConcurrently: options.partitionsConcurrently ?? 1,
    commitIntervalMs: options.commitIntervalMs ?? 0,
    ...(options.fetchMinBytes === undefined ? {} : { fetchMinBytes: options.fetchMinBytes }),
    ...(options.fetchMaxWaitMs === undefined ? {} : { fetchMaxWaitMs: options.fetchMaxWaitMs }),
    handleBatch: async (messages) => {
      const decoded: { event: E; message: IncomingMessage }[] = [];
      for (const message of messages) {
        if (message.value.byteLength > maxBytes) {
          await deadLetter(message, "oversized", new Error(`${message.value.byteLength} bytes > ${maxBytes}`));
          continue;
        }
        try {
          decoded.push({ event: options.decode(message.value), message });
        } catch (error) {
          if (!isPoison(error)) throw error;
          await deadLetter(message, "undecodable", error);
        }
      }
      try {
        await (groups === undefined ? applyTraced(decoded) : groups.apply(decoded));
        return;
      } catch (error) {
        if (!isPoison(error)) throw error;
      }
      // Something in the batch can never be applied: one at a time, so only that one is dropped.
      for (const item of decoded) {
        try {
          await applyTraced([item]);
        } catch (error) {
          if (!isPoison(error)) throw error;
          await deadLetter(item.message, "poison", error);
        }
      }
    },
  });
}

/** Current trace context as headers (W3C traceparent), for a producer that sends outside the request. */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}
