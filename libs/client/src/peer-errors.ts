import { type ServiceError, status } from "@grpc/grpc-js";
import {
  AlreadyExistsError,
  ConflictError,
  FailedPreconditionError,
  InternalError,
  PermissionDeniedError,
  ResourceExhaustedError,
  UnauthenticatedError,
  ValidationError,
} from "@prefix-guard/errors";
import { translatePeerError } from "@prefix-guard/grpc";

function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && typeof (error as Partial<ServiceError>).code === "number";
}

function trailer(error: ServiceError, key: string): string | undefined {
  const value = error.metadata?.get(key)[0];
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

/**
 * A failed call as the typed error the server threw, rebuilt from the status and the `pg-field` /
 * `pg-reason` trailers that libs/grpc's mapErrorToStatus attaches, so a harness can branch on
 * `instanceof ValidationError` and `error.field` the way the services do. Anything that is not a gRPC
 * status (a serialization bug, say) is returned unchanged.
 */
export function translateClientError(error: unknown, peer: string): Error {
  if (!isServiceError(error)) return error instanceof Error ? error : new Error(String(error));
  const details = error.details ?? "";
  const reason = trailer(error, "pg-reason");
  const options = { cause: error, ...(reason === undefined ? {} : { reason }) };
  switch (error.code) {
    case status.INVALID_ARGUMENT: {
      const field = trailer(error, "pg-field") ?? "request";
      // The server's details already read "<field>: <message>"; ValidationError adds the prefix again.
      const message = details.startsWith(`${field}: `) ? details.slice(field.length + 2) : details;
      return new ValidationError(field, message, options);
    }
    case status.ABORTED:
      return new ConflictError(details, options);
    case status.RESOURCE_EXHAUSTED:
      return new ResourceExhaustedError(details, options);
    case status.ALREADY_EXISTS:
      return new AlreadyExistsError(details, options);
    case status.FAILED_PRECONDITION:
      return new FailedPreconditionError(details, options);
    case status.PERMISSION_DENIED:
      return new PermissionDeniedError(details, options);
    case status.UNAUTHENTICATED:
      return new UnauthenticatedError(details, options);
    case status.INTERNAL:
      return new InternalError(`${peer}: ${details}`, options);
    default:
      return translatePeerError(error, peer);
  }
}
