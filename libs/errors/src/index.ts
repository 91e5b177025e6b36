// A small typed error hierarchy. Domain and adapters throw these; only libs/grpc maps them to
// gRPC status codes (mapErrorToStatus), so a code means the same thing in every service.

export type ErrorCode =
  | "invalid_argument"
  | "not_found"
  | "already_exists"
  | "conflict"
  | "resource_exhausted"
  | "failed_precondition"
  | "permission_denied"
  | "unauthenticated"
  | "unavailable"
  | "deadline_exceeded"
  | "internal";

export type ErrorContext = Readonly<Record<string, string | number | boolean | undefined>>;

export abstract class PrefixGuardError extends Error {
  abstract readonly code: ErrorCode;
  readonly context: ErrorContext;
  /** Stable machine-readable reason, e.g. "session_full"; sent as gRPC metadata `pg-reason`. */
  readonly reason: string | undefined;

  constructor(message: string, options: { context?: ErrorContext; reason?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.context = options.context ?? {};
    this.reason = options.reason;
  }
}

/** Bad input. `field` names the offending request field (e.g. "content[2].text"). */
export class ValidationError extends PrefixGuardError {
  readonly code = "invalid_argument" as const;
  readonly field: string;
  constructor(field: string, message: string, options: { reason?: string; cause?: unknown } = {}) {
    super(`${field}: ${message}`, { ...options, context: { field } });
    this.field = field;
  }
}

export class NotFoundError extends PrefixGuardError {
  readonly code = "not_found" as const;
}

export class AlreadyExistsError extends PrefixGuardError {
  readonly code = "already_exists" as const;
}

/** Lost an optimistic-concurrency race (expected seq / generation no longer current). Maps to ABORTED. */
export class ConflictError extends PrefixGuardError {
  readonly code = "conflict" as const;
}

export class ResourceExhaustedError extends PrefixGuardError {
  readonly code = "resource_exhausted" as const;
}

export class FailedPreconditionError extends PrefixGuardError {
  readonly code = "failed_precondition" as const;
}

export class PermissionDeniedError extends PrefixGuardError {
  readonly code = "permission_denied" as const;
}

export class UnauthenticatedError extends PrefixGuardError {
  readonly code = "unauthenticated" as const;
}

/** A dependency (DB, broker, peer service) cannot be reached; safe to retry. */
export class UnavailableError extends PrefixGuardError {
  readonly code = "unavailable" as const;
}

export class DeadlineExceededError extends PrefixGuardError {
  readonly code = "deadline_exceeded" as const;
}

export class InternalError extends PrefixGuardError {
  readonly code = "internal" as const;
}

export function isPrefixGuardError(error: unknown): error is PrefixGuardError {
  return error instanceof PrefixGuardError;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The default branch of a switch that must cover every case: it does not compile while a case is
 * missing, and at run time (data from a newer producer) it fails loudly instead of returning undefined.
 */
export function unhandledCase(value: never, what: string): never {
  const shown = typeof value === "object" && value !== null ? JSON.stringify(value).slice(0, 200) : String(value);
  throw new InternalError(`unhandled ${what}: ${shown}`);
}
