export type { ApplyOutcome } from "./consumer-position";
export {
  applyInSessionOrder,
  consumerPositionTable,
  ensureConsumerPositions,
  ensureRowsExist,
  lockConsumerPositions,
  readConsumerPosition,
  writeConsumerPositions,
} from "./consumer-position";
export type { Database, DatabaseOptions, DatabaseTarget } from "./database";
export { createDatabase, describeDatabaseUrl, parseDatabaseUrl } from "./database";
export { isLockFailure, isUniqueViolation, retryOnDeadlock, translateDbError, withDbTimeout } from "./db-errors";
export type { Migration } from "./migrations";
export { pendingMigrations, runMigrations } from "./migrations";
export { type Executor, type OpaqueTransactions, opaqueTransactions } from "./opaque-transactions";
export { MAX_SERVER_LOCK_NAME, serverLockName } from "./server-lock-name";
export type { Sql, SqlDialect, Statement } from "./sql";
export {
  dialectOf,
  forUpdate,
  inSqlTransaction,
  lockForUpdate,
  upsertStatement,
  valueList,
  valueRows,
  withSql,
} from "./sql";
