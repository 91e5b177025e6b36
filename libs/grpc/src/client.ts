import {
  type CallOptions,
  ChannelCredentials,
  type Client,
  type ClientUnaryCall,
  Metadata,
  type ServiceError,
  status,
} from "@grpc/grpc-js";
import {
  AlreadyExistsError,
  ConflictError,
  DeadlineExceededError,
  FailedPreconditionError,
  InternalError,
  isErrorReason,
  NotFoundError,
  PermissionDeniedError,
  ResourceExhaustedError,
  UnauthenticatedError,
  UnavailableError,
  ValidationError,
} from "@prefix-guard/errors";
import { injectTraceMetadata } from "./trace-metadata";

export type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => ClientUnaryCall;

export interface UnaryCallOptions {
  /** Every call has a deadline: a slow peer must not hold a request forever. */
  readonly deadlineMs: number;
  /** Retry on UNAVAILABLE only, and only when the call is idempotent. */
  readonly idempotent?: boolean;
  readonly maxAttempts?: number;
  readonly metadata?: Metadata;
}

/** Promisified unary call with a deadline, trace propagation and retries limited to idempotent calls. */
export async function callUnary<Req, Res>(
  client: Client,
  method: UnaryMethod<Req, Res>,
  request: Req,
  options: UnaryCallOptions,
): Promise<Res> {
  const attempts = options.idempotent ? (options.maxAttempts ?? 3) : 1;
  let lastError: ServiceError | undefined;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      return await new Promise<Res>((resolve, reject) => {
        const metadata = injectTraceMetadata(options.metadata?.clone() ?? new Metadata());
        method.call(client, request, metadata, { deadline: Date.now() + options.deadlineMs }, (error, response) =>
          error ? reject(error) : resolve(response),
        );
      });
    } catch (error) {
      lastError = error as ServiceError;
      if (lastError.code !== status.UNAVAILABLE || attempt === attempts) break;
      await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
    }
  }
  throw lastError;
}

function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && typeof (error as Partial<ServiceError>).code === "number";
}

function trailer(error: ServiceError, key: string): string | undefined {
  const value = error.metadata?.get(key)[0];
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

/**
 * A peer's status as the typed error the peer threw: the inverse of mapErrorToStatus, rebuilt from
 * the status and the `pg-field` / `pg-reason` trailers. A validation error of the peer stays a
 * validation error (never "unavailable": retrying it cannot succeed). Non-status errors pass through.
 */
export function translatePeerError(error: unknown, peer: string): Error {
  if (!isServiceError(error)) return error instanceof Error ? error : new Error(String(error));
  const details = error.details ?? "";
  // A reason this release does not know (a newer peer's) is dropped: the status still says what happened.
  const sent = trailer(error, "pg-reason");
  const reason = sent !== undefined && isErrorReason(sent) ? sent : undefined;
  const options = { cause: error, ...(reason === undefined ? {} : { reason }) };
  switch (error.code) {
    case status.INVALID_ARGUMENT: {
      const field = trailer(error, "pg-field") ?? "request";
      // The peer's details already read "<field>: <message>"; ValidationError adds the prefix again.
      const message = details.startsWith(`${field}: `) ? details.slice(field.length + 2) : details;
      return new ValidationError(field, message, options);
    }
    case status.NOT_FOUND:
      return new NotFoundError(details || `${peer}: not found`, options);
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
    case status.DEADLINE_EXCEEDED:
      return new DeadlineExceededError(`${peer} did not answer in time`, options);
    case status.UNAVAILABLE:
      return new UnavailableError(`${peer} unavailable: ${details}`, options);
    default:
      return new InternalError(`${peer}: ${details}`, options);
  }
}

export function insecureCredentials(): ChannelCredentials {
  return ChannelCredentials.createInsecure();
}
