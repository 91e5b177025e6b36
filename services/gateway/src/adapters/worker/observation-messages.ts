// What crosses between the proxy's thread and the observation thread. Plain data only (structured
// clone): the route by name, the request bytes in a buffer of their own that is transferred, not
// copied again.

import type { ExchangeFacts, UnobservedReason } from "../../application/observe-exchange";
import { OBSERVED_ROUTES, type RouteName } from "../../domain/routes";

export interface WireFacts extends Omit<ExchangeFacts, "route" | "requestBytes"> {
  readonly routeName: RouteName;
  readonly requestBytes: Uint8Array;
}

export type ToObservationThread =
  /** Exchanges that ended within one short window, in the order they ended. */
  | { readonly kind: "exchanges"; readonly facts: readonly WireFacts[] }
  | { readonly kind: "metrics"; readonly id: number }
  | { readonly kind: "stop" };

export type FromObservationThread =
  /** Exchanges handled since the last report, and what of them went unobserved (by reason). */
  | {
      readonly kind: "observed";
      readonly count: number;
      /** Their request bytes (what the proxy's side counts against GATEWAY_OBSERVATION_QUEUE_BYTES). */
      readonly bytes: number;
      readonly unobserved: Readonly<Partial<Record<UnobservedReason, number>>>;
    }
  | { readonly kind: "metrics"; readonly id: number; readonly text: string }
  | { readonly kind: "stopped" };

/**
 * The facts as sent, and what to transfer with them: the request's own bytes when they fill their
 * allocation (a body over 4 KiB read by the proxy does: Buffer.concat gives it an allocation of its
 * own), else a copy of exactly them. Transferring detaches the caller's buffer: the proxy hands the
 * bytes over once the exchange has ended (ProxyDeps.observe).
 */
export function factsToWire(facts: ExchangeFacts): { readonly facts: WireFacts; readonly transfer: ArrayBuffer[] } {
  const { route, requestBytes, ...rest } = facts;
  const owned = requestBytes.buffer;
  const fillsOwn =
    owned instanceof ArrayBuffer && requestBytes.byteOffset === 0 && requestBytes.byteLength === owned.byteLength;
  // A view into a larger (pooled) allocation is copied: transferring it would take the pool's other
  // buffers along, and cloning it would copy all of that.
  const bytes = fillsOwn ? new Uint8Array(owned) : new Uint8Array(requestBytes);
  return { facts: { ...rest, routeName: route.name, requestBytes: bytes }, transfer: [bytes.buffer as ArrayBuffer] };
}

export function factsFromWire(wire: WireFacts): ExchangeFacts {
  const { routeName, requestBytes, ...rest } = wire;
  return {
    ...rest,
    route: OBSERVED_ROUTES[routeName],
    requestBytes: Buffer.from(requestBytes.buffer, requestBytes.byteOffset, requestBytes.byteLength),
  };
}
