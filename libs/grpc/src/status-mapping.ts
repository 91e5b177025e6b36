import { Metadata, status } from "@grpc/grpc-js";
import { type ErrorCode, isPrefixGuardError, ValidationError } from "@prefix-guard/errors";

const codeToStatus: Record<ErrorCode, status> = {
  invalid_argument: status.INVALID_ARGUMENT,
  not_found: status.NOT_FOUND,
  already_exists: status.ALREADY_EXISTS,
  conflict: status.ABORTED,
  resource_exhausted: status.RESOURCE_EXHAUSTED,
  failed_precondition: status.FAILED_PRECONDITION,
  permission_denied: status.PERMISSION_DENIED,
  unauthenticated: status.UNAUTHENTICATED,
  unavailable: status.UNAVAILABLE,
  deadline_exceeded: status.DEADLINE_EXCEEDED,
  internal: status.INTERNAL,
};

export interface MappedStatus {
  readonly code: status;
  readonly details: string;
  readonly metadata: Metadata;
}

/**
 * The one place where errors become gRPC statuses. Typed errors keep their message, field (a
 * ValidationError's, or any error's `context.field`) and reason (as `pg-field` / `pg-reason` trailers); anything else is INTERNAL with a generic message so
 * driver internals never reach a caller.
 */
export function mapErrorToStatus(error: unknown): MappedStatus {
  const metadata = new Metadata();
  if (isPrefixGuardError(error)) {
    // A non-validation error may name the request field it is about too (e.g. FAILED_PRECONDITION on `request_id`).
    const field = error instanceof ValidationError ? error.field : error.context.field;
    if (typeof field === "string") metadata.set("pg-field", field);
    if (error.reason !== undefined) metadata.set("pg-reason", error.reason);
    // A rate or quota refusal says when to come back, in HTTP's unit (seconds) and in ms.
    const retryAfterMs = error.context.retry_after_ms;
    if (typeof retryAfterMs === "number") {
      metadata.set("retry-after-ms", String(retryAfterMs));
      metadata.set("retry-after", String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
    }
    return { code: codeToStatus[error.code], details: error.message, metadata };
  }
  return { code: status.INTERNAL, details: "internal error", metadata };
}
