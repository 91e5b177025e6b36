// What crosses between the proxy's thread and the observation thread. Plain data only (structured
// clone): the route by name, the caller by the two names the observation uses, and the request
// bytes in a buffer of their own that is transferred, not cloned.

import type { ExchangeFacts, UnobservedReason } from "../../application/observe-exchange";
import { OBSERVED_ROUTES, type RouteName } from "../../domain/routes";

export interface WireFacts extends Omit<ExchangeFacts, "route" | "requestBytes" | "requestBytesReleased"> {
  readonly routeName: RouteName;
  readonly requestBytes: Uint8Array;
}

export type ToObservationThread =
  /** The exchanges that ended in one turn of the proxy's loop, in the order they ended. */
  | { readonly kind: "exchanges"; readonly facts: readonly WireFacts[] }
  | { readonly kind: "metrics"; readonly id: number }
  | { readonly kind: "stop" };

export type FromObservationThread =
  /** Exchanges handled since the last report, and what of them went unobserved (by reason). */
  | {
      readonly kind: "observed";
      readonly count: number;
      readonly unobserved: Readonly<Partial<Record<UnobservedReason, number>>>;
    }
  | { readonly kind: "metrics"; readonly id: number; readonly text: string }
  | { readonly kind: "stopped" };

/** Whether these bytes are all of their memory, so transferring it moves nothing else. */
function ownsItsMemory(bytes: Buffer): boolean {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
}

/**
 * The facts as sent, and what to transfer with them. Released request bytes that are all of their
 * memory (a body read in several chunks is concatenated into memory of its own) are moved to the
 * thread as they are; otherwise exactly the request's bytes are copied first, because a Buffer may
 * be a view into a larger (pooled) allocation that cloning or moving would take whole.
 */
export function factsToWire(facts: ExchangeFacts): { readonly facts: WireFacts; readonly transfer: ArrayBuffer[] } {
  const { route, requestBytes, requestBytesReleased, principal, ...rest } = facts;
  let bytes: Uint8Array = requestBytes;
  if (requestBytesReleased !== true || !ownsItsMemory(requestBytes)) {
    bytes = new Uint8Array(requestBytes.byteLength);
    bytes.set(requestBytes);
  }
  return {
    facts: {
      ...rest,
      principal: { name: principal.name, scope: principal.scope },
      routeName: route.name,
      requestBytes: bytes,
    },
    transfer: [bytes.buffer as ArrayBuffer],
  };
}

export function factsFromWire(wire: WireFacts): ExchangeFacts {
  const { routeName, requestBytes, ...rest } = wire;
  return {
    ...rest,
    route: OBSERVED_ROUTES[routeName],
    requestBytes: Buffer.from(requestBytes.buffer, requestBytes.byteOffset, requestBytes.byteLength),
  };
}
