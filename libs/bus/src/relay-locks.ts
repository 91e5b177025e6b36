// Who may publish a service's outbox rows. On MySQL/MariaDB a lock is a GET_LOCK on a connection
// held for as long as the lock: if the process dies, the server frees its locks with the connection,
// and another replica takes over on its next attempt. SQLite is one process's file: that process is
// the only relay there. docs/decisions/relay-leases.md explains the leases.

import { serverLockName } from "@prefix-guard/db";
import type { Knex } from "knex";
import { assertRelayLeaseCount, fairLeaseShare, slotsOfLease } from "./lease-slots";

/** Exactly one active relay per lock across instances. */
export interface RelayLock {
  /** True when this instance holds (or just acquired) the lock. */
  tryAcquire(): Promise<boolean>;
  release(): Promise<void>;
}

/**
 * MySQL GET_LOCK on a connection held for the relay's life: if the process dies, the server frees the
 * lock with the connection, and another instance takes over on its next attempt.
 */
export function mysqlRelayLock(db: Knex, lockName: string): RelayLock {
  let connection: unknown;
  return {
    async tryAcquire() {
      try {
        if (connection !== undefined) {
          const [rows] = (await db
            .raw("SELECT IS_USED_LOCK(?) = CONNECTION_ID() AS mine", [lockName])
            .connection(connection)) as [Array<{ mine: number | null }>];
          if (rows[0]?.mine === 1) return true;
          await db.client.releaseConnection(connection);
          connection = undefined;
        }
        connection = await db.client.acquireConnection();
        const [rows] = (await db.raw("SELECT GET_LOCK(?, 0) AS got", [lockName]).connection(connection)) as [
          Array<{ got: number | null }>,
        ];
        if (rows[0]?.got === 1) return true;
        await db.client.releaseConnection(connection);
        connection = undefined;
        return false;
      } catch {
        if (connection !== undefined)
          await Promise.resolve(db.client.releaseConnection(connection)).catch(() => undefined);
        connection = undefined;
        return false;
      }
    },
    async release() {
      if (connection === undefined) return;
      try {
        await db.raw("SELECT RELEASE_LOCK(?)", [lockName]).connection(connection);
      } finally {
        await db.client.releaseConnection(connection);
        connection = undefined;
      }
    },
  };
}

/** SQLite is single-process: the process is the only relay. */
export function processRelayLock(): RelayLock {
  return { tryAcquire: async () => true, release: async () => undefined };
}

function databaseOf(db: Knex): string {
  return String((db.client.config.connection as { database?: string } | undefined)?.database ?? "");
}

/**
 * GET_LOCK names are server-wide: the database name is part of the lock, so two deployments (or a
 * test and a benchmark) sharing one MariaDB server never hold each other's relays.
 */
export function relayLockFor(db: Knex, lockName: string): RelayLock {
  if (db.client.config.client !== "mysql2") return processRelayLock();
  return mysqlRelayLock(db, serverLockName(lockName, databaseOf(db)));
}

/**
 * The N leases of one service's relay (lease-slots.ts): each publishes its own slots, and each is held
 * by one replica at a time. A replica runs one relay loop per lease and takes at most its share of
 * them, so replicas split the leases between them.
 */
export interface RelayLeases {
  readonly count: number;
  /**
   * Lease `lease`'s lock. Its tryAcquire answers false while this replica holds its share already, and
   * gives the lease up (answering false) when this replica holds more than its share: called between
   * two batches, so nothing of the lease is in flight then.
   */
  lock(lease: number): RelayLock;
  /** Leases this replica holds now. */
  held(): number;
  /** Releases everything still held; called once every lease's loop has stopped. */
  close(): Promise<void>;
}

/** SQLite: the one process holds every lease. */
export function processRelayLeases(count: number): RelayLeases {
  assertRelayLeaseCount(count);
  let closed = false;
  return {
    count,
    lock: () => processRelayLock(),
    held: () => (closed ? 0 : count),
    close: async () => {
      closed = true;
    },
  };
}

/** Replicas counted towards the share; further ones still relay, uncounted. */
export const MAX_RELAY_MEMBERS = 64;

export interface MysqlRelayLeasesOptions {
  /** How often the replicas present are counted again; default 1 s (the retry interval of a lease not held). */
  readonly membershipRefreshMs?: number;
  readonly now?: () => number;
}

/**
 * Leases as GET_LOCKs on one connection of this replica, its own rather than the pool's (a MariaDB
 * connection holds any number of named locks, and ending it frees them all):
 * - lease i is the locks of its slots (`<purpose>:slot:<s>`), taken all or none in one statement, so
 *   two replicas configured with different lease counts (during a rollout that changes it) never
 *   publish one slot together; lease 0 also takes `<purpose>`, the name of the single relay lock
 *   before leases, so a replica of that version and this one never publish together either;
 * - each replica takes one member lock (`<purpose>:member:<k>`), and the used member locks tell how
 *   many replicas share the leases: each takes at most its fair share (lease-slots.ts), and a replica
 *   holding more gives up its highest lease for a newcomer to take.
 */
export function mysqlRelayLeases(
  db: Knex,
  purpose: string,
  database: string,
  count: number,
  options: MysqlRelayLeasesOptions = {},
): RelayLeases {
  return new MysqlRelayLeases(db, purpose, database, count, options);
}

/** Leases of the relay `purpose` in this database; on SQLite, the one process holds them all. */
export function relayLeasesFor(db: Knex, purpose: string, count: number): RelayLeases {
  if (db.client.config.client !== "mysql2") return processRelayLeases(count);
  return mysqlRelayLeases(db, purpose, databaseOf(db), count);
}

type LockRow = Record<string, number | null>;

class MysqlRelayLeases implements RelayLeases {
  private connection: unknown;
  private memberLock: string | undefined;
  private members = 1;
  private membersCountedAtMs = Number.NEGATIVE_INFINITY;
  private readonly holding = new Set<number>();
  /** Lock calls of every lease run one at a time: they share the connection and the holdings. */
  private turn: Promise<unknown> = Promise.resolve();
  private readonly leaseLocks: string[][];
  private readonly memberLocks: string[];
  private readonly now: () => number;
  private readonly membershipRefreshMs: number;

  constructor(
    private readonly db: Knex,
    purpose: string,
    database: string,
    readonly count: number,
    options: MysqlRelayLeasesOptions,
  ) {
    assertRelayLeaseCount(count);
    this.now = options.now ?? Date.now;
    this.membershipRefreshMs = options.membershipRefreshMs ?? 1_000;
    this.leaseLocks = Array.from({ length: count }, (_, lease) => [
      ...(lease === 0 ? [serverLockName(purpose, database)] : []),
      ...slotsOfLease(lease, count).map((slot) => serverLockName(`${purpose}:slot:${slot}`, database)),
    ]);
    this.memberLocks = Array.from({ length: MAX_RELAY_MEMBERS }, (_, member) =>
      serverLockName(`${purpose}:member:${member}`, database),
    );
  }

  lock(lease: number): RelayLock {
    if (this.leaseLocks[lease] === undefined) throw new RangeError(`lease ${lease} is not one of 0..${this.count - 1}`);
    return {
      tryAcquire: () => this.inTurn(() => this.tryAcquire(lease)),
      release: () => this.inTurn(() => this.release(lease)),
    };
  }

  held(): number {
    return this.holding.size;
  }

  /**
   * Releases every lock (so another replica can take them as soon as this resolves), then ends the
   * connection, which would free them anyway.
   */
  close(): Promise<void> {
    return this.inTurn(async () => {
      const connection = this.connection;
      const locks = [
        ...[...this.holding].flatMap((lease) => this.leaseLocks[lease] ?? []),
        ...(this.memberLock === undefined ? [] : [this.memberLock]),
      ];
      if (connection !== undefined && locks.length > 0)
        await this.releaseLocks(connection, locks).catch(() => undefined);
      await this.drop();
    });
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const result = this.turn.then(work);
    this.turn = result.catch(() => undefined);
    return result;
  }

  private async tryAcquire(lease: number): Promise<boolean> {
    const locks = this.leaseLocks[lease] ?? [];
    try {
      const connection = await this.connect();
      await this.countMembers(connection);
      const share = fairLeaseShare(this.count, this.members);
      if (this.holding.has(lease)) {
        const [row] = await this.query(
          connection,
          "SELECT IS_USED_LOCK(?) = CONNECTION_ID() AS mine",
          locks.slice(0, 1),
        );
        if (row?.mine !== 1) {
          // The connection lost its locks: start again from nothing on a new one.
          await this.drop();
          return false;
        }
        if (this.holding.size > share && lease === Math.max(...this.holding)) {
          await this.releaseLocks(connection, locks);
          this.holding.delete(lease);
          return false;
        }
        return true;
      }
      if (this.holding.size >= share) return false;
      const [got] = await this.query(connection, `SELECT ${columns("GET_LOCK(?, 0)", locks.length)}`, locks);
      const taken = locks.filter((_, index) => got?.[`c${index}`] === 1);
      if (taken.length === locks.length) {
        this.holding.add(lease);
        return true;
      }
      if (taken.length > 0) await this.releaseLocks(connection, taken);
      return false;
    } catch {
      await this.drop();
      return false;
    }
  }

  private async release(lease: number): Promise<void> {
    if (!this.holding.has(lease) || this.connection === undefined) return;
    try {
      await this.releaseLocks(this.connection, this.leaseLocks[lease] ?? []);
      this.holding.delete(lease);
    } catch {
      await this.drop();
    }
  }

  private async connect(): Promise<unknown> {
    if (this.connection !== undefined) return this.connection;
    this.connection = await this.db.client.acquireRawConnection();
    this.holding.clear();
    this.memberLock = undefined;
    this.membersCountedAtMs = Number.NEGATIVE_INFINITY;
    return this.connection;
  }

  /** Counts the replicas present (used member locks), taking a member lock first if this one has none. */
  private async countMembers(connection: unknown): Promise<void> {
    const nowMs = this.now();
    if (this.memberLock !== undefined && nowMs - this.membersCountedAtMs < this.membershipRefreshMs) return;
    const [row] = await this.query(
      connection,
      `SELECT ${columns("IS_USED_LOCK(?)", this.memberLocks.length)}`,
      this.memberLocks,
    );
    const used = this.memberLocks.map((_, index) => row?.[`c${index}`] != null);
    if (this.memberLock === undefined) {
      const free = used.indexOf(false);
      const name = this.memberLocks[free];
      if (name !== undefined) {
        const [got] = await this.query(connection, "SELECT GET_LOCK(?, 0) AS got", [name]);
        if (got?.got === 1) {
          this.memberLock = name;
          used[free] = true;
        }
      }
    }
    this.members = Math.max(1, used.filter(Boolean).length);
    this.membersCountedAtMs = nowMs;
  }

  private async releaseLocks(connection: unknown, locks: readonly string[]): Promise<void> {
    await this.query(connection, `SELECT ${columns("RELEASE_LOCK(?)", locks.length)}`, locks);
  }

  private async query(connection: unknown, sql: string, values: readonly string[]): Promise<LockRow[]> {
    const [rows] = (await this.db.raw(sql, [...values]).connection(connection)) as [LockRow[]];
    return rows.map((row) => Object.fromEntries(Object.entries(row).map(([key, value]) => [key, asNumber(value)])));
  }

  /** Ends the connection: the server frees whatever locks it still holds. */
  private async drop(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    this.holding.clear();
    this.memberLock = undefined;
    if (connection !== undefined) await this.db.client.destroyRawConnection(connection).catch(() => undefined);
  }
}

/** `fn` applied to each of `count` placeholders, as columns c0, c1, … */
function columns(fn: string, count: number): string {
  return Array.from({ length: count }, (_, index) => `${fn} AS c${index}`).join(", ");
}

function asNumber(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  return Number(value);
}
