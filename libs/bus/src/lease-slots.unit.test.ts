import { describe, expect, it } from "vitest";
import { assertRelayLeaseCount, fairLeaseShare, RELAY_LEASE_SLOTS, relayLeaseSlot, slotsOfLease } from "./lease-slots";
import { partitionForKey } from "./partition";

describe("relay lease slots", () => {
  it("stores a key with Kafka's hash of it over 64 slots", () => {
    // Pinned: a stored slot must never move between releases (rows keep the one they were written with).
    expect(["session-1", "s", "", "会话-42", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"].map(relayLeaseSlot)).toEqual([
      12, 47, 25, 49, 59,
    ]);
    expect(relayLeaseSlot("session-1")).toBe(partitionForKey("session-1", RELAY_LEASE_SLOTS));
  });

  it("spreads keys over every slot", () => {
    const used = new Set(Array.from({ length: 5_000 }, (_, i) => relayLeaseSlot(`session-${i}`)));
    expect(used.size).toBe(RELAY_LEASE_SLOTS);
  });

  it("gives every slot to exactly one lease, for every lease count", () => {
    for (let leases = 1; leases <= RELAY_LEASE_SLOTS; leases++) {
      const owners = new Map<number, number>();
      for (let lease = 0; lease < leases; lease++)
        for (const slot of slotsOfLease(lease, leases)) {
          expect(owners.has(slot), `slot ${slot} of ${leases} leases`).toBe(false);
          owners.set(slot, lease);
        }
      expect(owners.size).toBe(RELAY_LEASE_SLOTS);
      for (const [slot, lease] of owners) expect(slot % leases).toBe(lease);
    }
  });

  it("keeps every key of a slot with one lease whatever the lease count, so N can change without rewriting rows", () => {
    const slot = relayLeaseSlot("session-1");
    for (const leases of [1, 2, 3, 4, 8, 64]) {
      const holders = Array.from({ length: leases }, (_, lease) => lease).filter((lease) =>
        slotsOfLease(lease, leases).includes(slot),
      );
      expect(holders).toEqual([slot % leases]);
    }
  });

  it("one lease publishes every slot; 4 leases 16 each", () => {
    expect(slotsOfLease(0, 1)).toEqual(Array.from({ length: RELAY_LEASE_SLOTS }, (_, slot) => slot));
    expect(slotsOfLease(1, 4)).toEqual(Array.from({ length: 16 }, (_, i) => 1 + 4 * i));
  });

  it("refuses a lease count outside 1..64 and a lease outside the count", () => {
    for (const leases of [0, -1, 65, 1.5, Number.NaN]) expect(() => assertRelayLeaseCount(leases)).toThrow(RangeError);
    expect(() => assertRelayLeaseCount(64)).not.toThrow();
    expect(() => slotsOfLease(4, 4)).toThrow(RangeError);
    expect(() => slotsOfLease(-1, 4)).toThrow(RangeError);
  });

  it("shares leases so the replicas present can hold them all", () => {
    expect([1, 2, 3, 4, 5].map((members) => fairLeaseShare(4, members))).toEqual([4, 2, 2, 1, 1]);
    expect(fairLeaseShare(4, 0)).toBe(4);
    expect(fairLeaseShare(1, 3)).toBe(1);
  });
});
