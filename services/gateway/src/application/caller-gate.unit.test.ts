import { LOCAL_PRINCIPAL, type Principal, type Role } from "@prefix-guard/access";
import { UnauthenticatedError } from "@prefix-guard/errors";
import type { Authenticator, PresentedCredentials } from "@prefix-guard/grpc";
import { describe, expect, it } from "vitest";
import { CallerGate } from "./caller-gate";

const principal = (name: string, roles: Role[], limits: Principal["limits"] = {}): Principal => ({
  ...LOCAL_PRINCIPAL,
  name,
  roles: new Set(roles),
  limits,
});

/** Principals by token; a missing token is refused the way the principals file refuses it. */
function authenticatorOf(byToken: Record<string, Principal>): Authenticator {
  return {
    authenticate: (presented: PresentedCredentials) => {
      const found = presented.bearerToken === undefined ? undefined : byToken[presented.bearerToken];
      if (found === undefined) throw new UnauthenticatedError("invalid bearer token", { reason: "invalid_token" });
      return found;
    },
    names: () => new Set(Object.values(byToken).map((p) => p.name)),
    close: () => undefined,
  };
}

const presented = (bearerToken: string | undefined): PresentedCredentials => ({
  bearerToken,
  tokenCarrier: "x-prefix-guard-token header",
  certificateNames: [],
  confidential: true,
});

describe("CallerGate", () => {
  const harness = principal("team-a", ["harness"]);
  const sre = principal("oncall", ["sre"]);
  const limited = principal("limited", ["harness"], { requestsPerSecond: 2, burst: 1 });
  let clock = 0;
  const gate = new CallerGate(authenticatorOf({ a: harness, s: sre, l: limited }), () => clock);

  it("admits a harness principal", () => {
    expect(gate.admit(presented("a"))).toEqual({ kind: "admitted", principal: harness });
  });

  it("refuses an unknown caller as unauthenticated, with the authenticator's words", () => {
    const refused = gate.admit(presented("nope"));
    expect(refused).toMatchObject({ kind: "refused", outcome: "unauthenticated", error: { status: 401 } });
    expect(refused.kind === "refused" && refused.error.message).toBe("invalid bearer token");
  });

  it("refuses a principal without the harness role", () => {
    expect(gate.admit(presented("s"))).toMatchObject({
      kind: "refused",
      outcome: "forbidden",
      error: { status: 403, message: "principal oncall may not call the gateway; it needs the role harness" },
    });
  });

  it("holds each principal to its own rate, on the clock it is given", () => {
    expect(gate.admit(presented("l")).kind).toBe("admitted");
    expect(gate.admit(presented("l"))).toMatchObject({
      kind: "refused",
      outcome: "rate_limited",
      error: { status: 429, retryAfterMs: 500 },
    });
    expect(gate.admit(presented("a")).kind).toBe("admitted");
    clock += 500;
    expect(gate.admit(presented("l")).kind).toBe("admitted");
  });
});
