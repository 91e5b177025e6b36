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

/**
 * Every `pg-reason` a service sends: a closed list, so a new reason is a decision made here, and
 * docs/integration.md's error table documents each one (error-reasons.unit.test.ts checks both ways).
 */
export const ERROR_REASONS = [
  // The session and its history.
  "session_not_found",
  "session_deleted",
  "session_exists",
  "session_ended",
  "session_full",
  "parent_not_found",
  "not_side_task",
  "message_not_found",
  "boundary_not_found",
  "boundary_deleted",
  "boundary_moved_back",
  "compaction_boundary_missing",
  "nothing_to_compact",
  "too_little_history",
  "seq_mismatch",
  "generation_mismatch",
  "min_seq_not_reached",
  // Input bounds and shapes.
  "json_too_deep",
  "json_too_many_elements",
  "unknown_field",
  "invalid_utf8",
  "malformed_request",
  "rules_file_refused",
  // Usage records.
  "request_not_built",
  "idempotency_key_reused",
  "event_id_reused",
  "session_has_no_calls",
  "workspace_has_no_calls",
  // Callers.
  "missing_credentials",
  "invalid_token",
  "token_over_plaintext",
  "bad_authorization",
  "unknown_certificate",
  "role_required",
  "owner_not_granted",
  "workspace_not_granted",
  "rate_limited",
  "session_quota",
  "too_many_followers",
  // Dependencies.
  "rules_snapshot_unavailable",
  "sealed_content_unreadable",
  // Internal: a lost insert race (retried or mapped before a caller sees it), and an event a
  // consumer cannot read (the reason it is dead-lettered with).
  "unique_violation",
  "session_not_created",
  "undecodable",
  "unknown_version",
  "invalid_envelope",
] as const;

export type ErrorReason = (typeof ERROR_REASONS)[number];

export function isErrorReason(value: string): value is ErrorReason {
  return (ERROR_REASONS as readonly string[]).includes(value);
}

export abstract class PrefixGuardError extends Error {
  abstract readonly code: ErrorCode;
  readonly context: ErrorContext;
  /** Stable machine-readable reason, e.g. "session_full"; sent as gRPC metadata `pg-reason`. */
  readonly reason: ErrorReason | undefined;

  constructor(message: string, options: { context?: ErrorContext; reason?: ErrorReason; cause?: unknown } = {}) {
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
  constructor(field: string, message: string, options: { reason?: ErrorReason; cause?: unknown } = {}) {
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
