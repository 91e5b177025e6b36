// An application declares its transactions as an opaque brand (its ports name no driver type);
// the adapter that implements the ports holds knex transactions behind it. These are the only
// places where the brand and knex meet, for any service's handle type.

import type { Knex } from "knex";

/** A connection, an open transaction, or the application's handle of one. */
export type Executor<Handle> = Knex | Knex.Transaction | Handle;

export interface OpaqueTransactions<Handle> {
  /** The application's handle of a transaction: the knex transaction itself, typed opaquely. */
  handleOf(trx: Knex.Transaction): Handle;
  /** The knex transaction behind the application's handle of it. */
  transactionOf(tx: Handle): Knex.Transaction;
  /** Whichever of the three it is given, as knex runs queries on it. */
  knexOf(executor: Executor<Handle>): Knex | Knex.Transaction;
}

/**
 * The casts between an application's transaction brand and knex. Safe because the adapter is the
 * only producer of handles: every Handle it gives out was a knex transaction.
 */
export function opaqueTransactions<Handle extends object>(): OpaqueTransactions<Handle> {
  return {
    handleOf: (trx) => trx as unknown as Handle,
    transactionOf: (tx) => tx as unknown as Knex.Transaction,
    knexOf: (executor) => executor as Knex | Knex.Transaction,
  };
}
