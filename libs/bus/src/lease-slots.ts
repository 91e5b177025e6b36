// Which relay lease publishes which outbox row (docs/decisions/relay-leases.md). A row is stored with
// the slot of its message key, a fixed 0..RELAY_LEASE_SLOTS-1; lease i of N publishes the slots with
// slot mod N == i. The stored slot never depends on N, so N can change between deployments without
// rewriting a row, and every row of one key stays with one lease holder, which keeps the key's order.

import { partitionForKey } from "./partition";

/** Slots rows are spread over; also the most leases a service can be split into. */
export const RELAY_LEASE_SLOTS = 64;

/** The slot a row of this message key is stored with: Kafka's own hash of the key (partition.ts). */
export function relayLeaseSlot(key: string): number {
  return partitionForKey(key, RELAY_LEASE_SLOTS);
}

/** A lease count a relay can run with: 1..RELAY_LEASE_SLOTS. */
export function assertRelayLeaseCount(leases: number): void {
  if (!Number.isInteger(leases) || leases < 1 || leases > RELAY_LEASE_SLOTS)
    throw new RangeError(`relay leases must be an integer in 1..${RELAY_LEASE_SLOTS}, got ${leases}`);
}

/** The slots lease `lease` of `leases` publishes, ascending. */
export function slotsOfLease(lease: number, leases: number): number[] {
  assertRelayLeaseCount(leases);
  if (!Number.isInteger(lease) || lease < 0 || lease >= leases)
    throw new RangeError(`lease ${lease} is not one of 0..${leases - 1}`);
  const slots: number[] = [];
  for (let slot = lease; slot < RELAY_LEASE_SLOTS; slot += leases) slots.push(slot);
  return slots;
}

/**
 * How many leases one replica takes when `members` replicas share `leases`: the even share rounded
 * up, so the members together can hold every lease.
 */
export function fairLeaseShare(leases: number, members: number): number {
  return Math.ceil(leases / Math.max(1, members));
}
