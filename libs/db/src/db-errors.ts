import { ConflictError, DeadlineExceededError, isPrefixGuardError, UnavailableError } from "@prefix-guard/errors";

interface DriverError {
  code?: string;
  errno?: number;
  message?: string;
  cause?: unknown;
}

function asDriverError(error: unknown): DriverError {
  return typeof error === "object" && error !== null ? (error as DriverError) : {};
}

export function isUniqueViolation(error: unknown): boolean {
  const e = asDriverError(error);
  return (
    e.errno === 1062 ||
    e.code === "ER_DUP_ENTRY" ||
    e.code === "SQLITE_CONSTRAINT_PRIMARYKEY" ||
    e.code === "SQLITE_CONSTRAINT_UNIQUE"
  );
}

const retriableMysqlErrnos = new Set([1205, 1213, 2006, 2013]);
const unavailableCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "PROTOCOL_CONNECTION_LOST",
  "SQLITE_BUSY",
  "SQLITE_LOCKED",
]);

/**
 * Driver errors become typed errors here and nowhere else: a unique-key violation is a conflict
 * (someone else wrote that seq), deadlocks, lock waits and lost connections are retriable.
 */
export function translateDbError(error: unknown, context: Record<string, string | number> = {}): Error {
  if (isPrefixGuardError(error)) return error;
  const e = asDriverError(error);
  if (isUniqueViolation(error))
    return new ConflictError("concurrent write won the race", { cause: error, context, reason: "unique_violation" });
  if (
    (e.errno !== undefined && retriableMysqlErrnos.has(e.errno)) ||
    (e.code !== undefined && unavailableCodes.has(e.code))
  ) {
    return new UnavailableError(`database unavailable: ${e.code ?? e.errno}`, { cause: error, context });
  }
  if (typeof e.message === "string" && /Knex: Timeout acquiring a connection/.test(e.message)) {
    return new UnavailableError("database unavailable: no connection within the acquire timeout", {
      cause: error,
      context,
    });
  }
  return error instanceof Error ? error : new Error(String(error));
}

/** Bounds a DB call; knex has no per-query timeout that also covers connection acquisition. */
export async function withDbTimeout<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceededError(`${what} took longer than ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const deadlockErrnos = new Set([1213, 1205]);

/** MariaDB deadlock (1213) and lock-wait timeout (1205): the transaction was rolled back whole and may simply be rerun. */
export function isLockFailure(error: unknown): boolean {
  const { errno } = asDriverError(error);
  return errno !== undefined && deadlockErrnos.has(errno);
}

/**
 * Reruns a transaction that InnoDB chose as a deadlock victim (or whose lock wait timed out): the
 * transaction was rolled back whole, so running it again is safe and usually succeeds at once. The
 * driver's error may arrive as it is or as the cause of translateDbError's typed one.
 */
export async function retryOnDeadlock<T>(work: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const lockFailure = isLockFailure(error) || isLockFailure(asDriverError(error).cause);
      if (!lockFailure || attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.floor(Math.random() * 10)));
    }
  }
}
