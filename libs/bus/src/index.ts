export type { EmbeddedBusOptions } from "./embedded-bus";
export {
  createEmbeddedBus,
  DEFAULT_MAX_RETENTION_MS,
  DEFAULT_PRUNE_INTERVAL_MS,
  embeddedBusMigrations,
  pruneEmbeddedLog,
} from "./embedded-bus";
export type { EventConsumerOptions } from "./event-consumer";
export { PoisonMessageError, runEventConsumer, traceHeaders } from "./event-consumer";
export type { KafkaBusOptions } from "./kafka-bus";
export { createKafkaBus } from "./kafka-bus";
export type { OutboxEntry, OutboxRelayOptions, OutboxRow, OutboxSource, RelayLock } from "./outbox";
export {
  DEFAULT_OUTBOX_PURGE_INTERVAL_MS,
  DEFAULT_OUTBOX_RETENTION_MS,
  enqueueOutboxMessage,
  enqueueOutboxMessages,
  mysqlRelayLock,
  OutboxRelay,
  outboxInsert,
  outboxInsertsWhere,
  outboxMessageTable,
  processRelayLock,
  RELAY_PUBLISHER_HEADER,
  relayLockFor,
  tableOutboxSource,
} from "./outbox";
export { partitionForKey } from "./partition";
export type { IncomingMessage, MessageBus, OutgoingMessage, SubscribeOptions, Subscription, TopicSpec } from "./port";
