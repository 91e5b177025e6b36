import { translatePeerError } from "@prefix-guard/grpc/client";

/**
 * A failed call as the typed error the server threw (ValidationError with its field, ConflictError,
 * ResourceExhaustedError with its reason, ...), so a harness can branch on `instanceof` and
 * `error.field` the way the services do. The mapping lives in libs/grpc, next to its inverse.
 */
export function translateClientError(error: unknown, peer: string): Error {
  return translatePeerError(error, peer);
}
