import { outboxMessageLeaseSlot, outboxMessageTable } from "@prefix-guard/bus";
import type { Migration } from "@prefix-guard/db";

// The gateway keeps no state of its own in a database: its observations (prompt.prefix.v1,
// llm.usage.v1) go through this outbox, so they are published once written even while the broker
// is down. What it remembers of each session lives in process memory.
export const gatewayMigrations: Migration[] = [outboxMessageTable, outboxMessageLeaseSlot];
