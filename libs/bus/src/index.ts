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
export {
  assertRelayLeaseCount,
  fairLeaseShare,
  RELAY_LEASE_SLOTS,
  relayLeaseSlot,
  slotsOfLease,
} from "./lease-slots";
export type { OutboxEntry, OutboxRelayOptions, OutboxRow, OutboxSource } from "./outbox";
export {
  assignLeaseSlots,
  DEFAULT_OUTBOX_PURGE_INTERVAL_MS,
  DEFAULT_OUTBOX_RETENTION_MS,
  enqueueOutboxMessage,
  enqueueOutboxMessages,
  OutboxRelay,
  outboxInsert,
  outboxInsertsWhere,
  outboxMessageLeaseSlot,
  outboxMessageTable,
  processPublisherId,
  RELAY_PUBLISHER_HEADER,
  relayedMessage,
  tableOutboxSource,
} from "./outbox";
export { partitionForKey } from "./partition";
export type { IncomingMessage, MessageBus, OutgoingMessage, SubscribeOptions, Subscription, TopicSpec } from "./port";
export type { MysqlRelayLeasesOptions, RelayLeases, RelayLock } from "./relay-locks";
export {
  MAX_RELAY_MEMBERS,
  mysqlRelayLeases,
  mysqlRelayLock,
  processRelayLeases,
  processRelayLock,
  relayLeasesFor,
  relayLockFor,
} from "./relay-locks";
