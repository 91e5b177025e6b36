// Who may send traffic through the gateway: the principals of the security work (README "Security"),
// asked the same questions the gRPC services ask. A caller presents a token in the
// `x-prefix-guard-token` header (the provider's own authorization / x-api-key headers belong to the
// provider and pass through untouched) or, under mTLS, a client certificate. The principal must hold
// the `harness` role and be within its request rate. Without PRINCIPALS_FILE on loopback every
// caller is the local principal, as for `make run`'s gRPC services.
//
// A refusal is answered before anything is read or forwarded, and says what failed, never the token.

import { type Principal, RequestRateLimiter, type Role } from "@prefix-guard/access";
import { UnauthenticatedError } from "@prefix-guard/errors";
import type { Authenticator, PresentedCredentials } from "@prefix-guard/grpc";
import { type GatewayError, gatewayErrors } from "../domain/errors";

/** The header a caller puts its prefix-guard token in (never forwarded: it is an `x-prefix-guard-*` header). */
export const TOKEN_HEADER = "x-prefix-guard-token";

/** Roles that may call the proxy. */
export const GATEWAY_ROLES: readonly Role[] = ["harness"];

export type Admission =
  | { readonly kind: "admitted"; readonly principal: Principal }
  | {
      readonly kind: "refused";
      readonly error: GatewayError;
      /** unauthenticated / permission_denied / rate_limited: the metric's outcome. */
      readonly outcome: "unauthenticated" | "forbidden" | "rate_limited";
    };

export class CallerGate {
  private readonly limiter = new RequestRateLimiter();

  constructor(
    private readonly authenticator: Authenticator,
    private readonly now: () => number,
  ) {}

  admit(presented: PresentedCredentials): Admission {
    let principal: Principal;
    try {
      principal = this.authenticator.authenticate(presented);
    } catch (error) {
      if (error instanceof UnauthenticatedError)
        return { kind: "refused", error: gatewayErrors.unauthenticated(error.message), outcome: "unauthenticated" };
      throw error;
    }
    if (!GATEWAY_ROLES.some((role) => principal.roles.has(role)))
      return {
        kind: "refused",
        error: gatewayErrors.permissionDenied(principal.name, GATEWAY_ROLES),
        outcome: "forbidden",
      };
    const rate = this.limiter.take(principal, this.now());
    if (!rate.allowed)
      return {
        kind: "refused",
        error: gatewayErrors.rateLimited(principal.name, rate.retryAfterMs),
        outcome: "rate_limited",
      };
    return { kind: "admitted", principal };
  }

  close(): void {
    this.authenticator.close();
  }
}
