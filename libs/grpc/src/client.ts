import {
  type CallOptions,
  ChannelCredentials,
  type Client,
  type ClientUnaryCall,
  Metadata,
  type ServiceError,
  status,
} from "@grpc/grpc-js";
import { DeadlineExceededError, NotFoundError, UnavailableError } from "@prefix-guard/errors";
import { injectTraceMetadata } from "./trace-metadata";

type UnaryMethod<Req, Res> = (
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

/**
 * A peer's status as our typed error, for callers that surface it: unreachable and timed-out peers
 * become UnavailableError/DeadlineExceededError, NOT_FOUND keeps its meaning; the rest is rethrown.
 */
export function translatePeerError(error: unknown, peer: string): Error {
  const e = error as Partial<ServiceError>;
  if (e.code === status.UNAVAILABLE)
    return new UnavailableError(`${peer} unavailable: ${e.details ?? ""}`, { cause: error });
  if (e.code === status.DEADLINE_EXCEEDED)
    return new DeadlineExceededError(`${peer} did not answer in time`, { cause: error });
  if (e.code === status.NOT_FOUND) return new NotFoundError(e.details ?? `${peer}: not found`, { cause: error });
  return error instanceof Error ? error : new Error(String(error));
}

export function insecureCredentials(): ChannelCredentials {
  return ChannelCredentials.createInsecure();
}
