import { type Context, context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { errorMessage, ValidationError } from "@prefix-guard/errors";
import type { Logger } from "@prefix-guard/logging";
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
  readonly apply: (event: E, message: IncomingMessage) => Promise<void>;
  /** Largest accepted message; bigger ones go to the DLQ unread (bounded memory per message). */
  readonly maxMessageBytes?: number;
  readonly fromBeginning?: boolean;
  readonly onOutcome?: (outcome: "applied" | "dead_lettered") => void;
}

const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

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
    options.onOutcome?.("dead_lettered");
  }

  return bus.subscribe({
    topic,
    groupId,
    ...(options.fromBeginning !== undefined ? { fromBeginning: options.fromBeginning } : {}),
    handleMessage: async (message) => {
      if (message.value.byteLength > maxBytes) {
        await deadLetter(message, "oversized", new Error(`${message.value.byteLength} bytes > ${maxBytes}`));
        return;
      }
      let event: E;
      try {
        event = options.decode(message.value);
      } catch (error) {
        if (error instanceof ValidationError || error instanceof PoisonMessageError) {
          await deadLetter(message, "undecodable", error);
          return;
        }
        throw error;
      }
      const parent = extractContext(message.headers);
      await context.with(parent, () =>
        tracer.startActiveSpan(
          `${topic} process`,
          {
            kind: SpanKind.CONSUMER,
            attributes: {
              "messaging.system": bus.kind,
              "messaging.destination.name": topic,
              "messaging.consumer.group.name": groupId,
              "messaging.kafka.message.key": message.key,
            },
          },
          async (span) => {
            try {
              await options.apply(event, message);
              options.onOutcome?.("applied");
            } catch (error) {
              if (error instanceof PoisonMessageError || error instanceof ValidationError) {
                await deadLetter(message, "poison", error);
                return;
              }
              span.recordException(error as Error);
              span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
              throw error;
            } finally {
              span.end();
            }
          },
        ),
      );
    },
  });
}

/** Current trace context as headers (W3C traceparent), for a producer that sends outside the request. */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}
