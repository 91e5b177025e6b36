// The server's admission of a call, from a real client: authenticated by the principals file,
// admitted by the method's roles, charged against the principal's rate. Each rule on its own.

import { Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { silentLogger } from "@prefix-guard/logging";
import {
  Decision,
  GetRequest,
  InvalidateRequest,
  ResolveRequest,
  RulesSnapshotClient,
  RulesSnapshotService,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf, callUnary, parsePrincipals, type RunningGrpcServer, startGrpcServer, tokenSha256Hex } from "./index";
import { authenticatePresented } from "./principals";

const PEER = "peer-token-0123456789abcdef";
const SRE = "sre-token-0123456789abcdef";
const SLOW = "limited-token-0123456789abcdef";

const principals = parsePrincipals(
  JSON.stringify({
    principals: [
      { name: "prompt-assembly", roles: ["peer"], token_sha256: [tokenSha256Hex(PEER)] },
      { name: "oncall", roles: ["sre"], token_sha256: [tokenSha256Hex(SRE)] },
      { name: "limited", roles: ["peer"], token_sha256: [tokenSha256Hex(SLOW)], requests_per_second: 1, burst: 2 },
    ],
  }),
);

describe("admission: authentication, roles and rate", () => {
  let server: RunningGrpcServer;
  let client: RulesSnapshotClient;
  let handled = 0;
  let clock = 1_000_000;
  const seen: string[] = [];

  beforeAll(async () => {
    server = await startGrpcServer({
      authenticator: {
        authenticate: (presented) => authenticatePresented(principals, presented),
        names: () => new Set(principals.principals.map((p) => p.name)),
        close: () => undefined,
      },
      now: () => clock,
      host: "127.0.0.1",
      port: 0,
      logger: silentLogger(),
      services: [
        {
          name: "prefixguard.rules.v1.RulesSnapshot",
          definition: RulesSnapshotService,
          access: { resolve: ["peer"], invalidate: ["operator"], get: [] },
          methods: {
            resolve: async (request: ResolveRequest, call: object) => {
              handled += 1;
              const caller = callerOf(call);
              seen.push(`${caller.principal.name}/${caller.role}`);
              return {
                sectionText: request.sessionId,
                decision: Decision.DECISION_PINNED,
                rulesHash: "",
                pinnedGeneration: 0,
                warning: "",
                refreshReason: "",
              };
            },
            invalidate: async () => ({ removed: true }),
            get: async () => ({ found: false }),
          },
        },
      ],
    });
    client = new RulesSnapshotClient(server.address, (await import("@grpc/grpc-js")).credentials.createInsecure());
  });
  afterAll(async () => {
    client.close();
    await server.shutdown(100);
  });

  const call = (method: "resolve" | "invalidate" | "get", token: string | undefined) => {
    const metadata = new Metadata();
    if (token !== undefined) metadata.set("authorization", `Bearer ${token}`);
    const request =
      method === "resolve"
        ? ResolveRequest.fromPartial({ sessionId: "s1" })
        : method === "invalidate"
          ? InvalidateRequest.fromPartial({ sessionId: "s1" })
          : GetRequest.fromPartial({ sessionId: "s1" });
    return callUnary(client, client[method] as never, request as never, { deadlineMs: 3_000, metadata }).then(
      () => null,
      (error: unknown) => error as ServiceError,
    );
  };

  it("admits a principal under a role the method allows, and tells the handler who called", async () => {
    expect(await call("resolve", PEER)).toBeNull();
    expect(seen.at(-1)).toBe("prompt-assembly/peer");
  });

  it("refuses a missing or unknown token before the handler runs", async () => {
    const before = handled;
    expect((await call("resolve", undefined))?.code).toBe(status.UNAUTHENTICATED);
    expect((await call("resolve", "x"))?.code).toBe(status.UNAUTHENTICATED);
    expect((await call("resolve", `${PEER}-longer`))?.code).toBe(status.UNAUTHENTICATED);
    expect(handled).toBe(before);
  });

  it("denies a role the method does not allow, naming the role; an empty list denies everyone", async () => {
    const before = handled;
    const denied = await call("resolve", SRE);
    expect(denied?.code).toBe(status.PERMISSION_DENIED);
    expect(denied?.details).toContain("needs the role peer");
    expect(denied?.metadata.get("pg-reason")).toEqual(["role_required"]);
    expect((await call("invalidate", PEER))?.details).toContain("needs the role operator");
    expect((await call("get", PEER))?.details).toContain("no role may call it");
    expect(handled).toBe(before);
  });

  it("holds a principal to its rate: RESOURCE_EXHAUSTED with when to come back", async () => {
    expect(await call("resolve", SLOW)).toBeNull();
    expect(await call("resolve", SLOW)).toBeNull();
    const limited = await call("resolve", SLOW);
    expect(limited?.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(limited?.metadata.get("pg-reason")).toEqual(["rate_limited"]);
    expect(Number(limited?.metadata.get("retry-after-ms")[0])).toBe(1000);
    expect(limited?.metadata.get("retry-after")).toEqual(["1"]);
    // Other principals are not charged for it.
    expect(await call("resolve", PEER)).toBeNull();
    clock += 1_000;
    expect(await call("resolve", SLOW)).toBeNull();
  });

  it("will not start a server whose method has no access rule (deny by default)", async () => {
    await expect(
      startGrpcServer({
        authenticator: {
          authenticate: () => principals.principals[0] as never,
          names: () => new Set(),
          close: () => undefined,
        },
        host: "127.0.0.1",
        port: 0,
        logger: silentLogger(),
        services: [
          {
            name: "prefixguard.rules.v1.RulesSnapshot",
            definition: RulesSnapshotService,
            access: { resolve: ["peer"], get: ["peer"] },
            methods: { resolve: async () => ({}), invalidate: async () => ({}), get: async () => ({}) },
          },
        ],
      }),
    ).rejects.toThrow(/no access rule for invalidate/);
  });
});
