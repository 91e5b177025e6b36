import { credentials, Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { ResourceExhaustedError, ValidationError } from "@prefix-guard/errors";
import { silentLogger } from "@prefix-guard/logging";
import {
  Decision,
  type ResolveRequest,
  RulesSnapshotClient,
  RulesSnapshotService,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callUnary, checkHealth, type RunningGrpcServer, startGrpcServer } from "./index";
import { localTestAuthenticator, openToEveryRole } from "./testing";

describe("gRPC server helper", () => {
  let server: RunningGrpcServer;
  let client: RulesSnapshotClient;
  let calls = 0;
  beforeAll(async () => {
    server = await startGrpcServer({
      authenticator: localTestAuthenticator(),
      host: "127.0.0.1",
      port: 0,
      logger: silentLogger(),
      services: [
        {
          name: "prefixguard.rules.v1.RulesSnapshot",
          definition: RulesSnapshotService,
          access: openToEveryRole(RulesSnapshotService),
          methods: {
            resolve: async (request: ResolveRequest) => {
              calls += 1;
              if (request.sessionId === "") throw new ValidationError("session_id", "must not be empty");
              if (request.sessionId === "full")
                throw new ResourceExhaustedError("session is full", { reason: "session_full" });
              if (request.sessionId === "slow") await new Promise((r) => setTimeout(r, 500));
              if (request.sessionId === "boom") throw new Error("driver exploded with secret=hunter2");
              return {
                sectionText: `rules for ${request.sessionId}`,
                decision: Decision.DECISION_PINNED,
                rulesHash: "h",
                pinnedGeneration: 0,
                warning: "",
              };
            },
            invalidate: async () => ({ removed: false }),
            get: async () => ({ found: false }),
          },
        },
      ],
    });
    client = new RulesSnapshotClient(server.address, credentials.createInsecure());
  });
  afterAll(async () => {
    client.close();
    await server.shutdown();
  });

  const resolve = (sessionId: string, deadlineMs = 2_000) =>
    callUnary(
      client,
      client.resolve,
      { sessionId, workspace: "/w", compactionGeneration: 0, embed: false, locale: "" },
      { deadlineMs },
    );

  it("answers grpc.health.v1 Check with SERVING for the server and each service", async () => {
    expect(await checkHealth(server.address)).toBe("SERVING");
    expect(await checkHealth(server.address, "prefixguard.rules.v1.RulesSnapshot")).toBe("SERVING");
  });

  it("returns the handler's response", async () => {
    expect((await resolve("811")).sectionText).toBe("rules for 811");
  });

  it("maps a ValidationError to INVALID_ARGUMENT with the field named", async () => {
    const error = (await resolve("").catch((e: unknown) => e)) as ServiceError;
    expect(error.code).toBe(status.INVALID_ARGUMENT);
    expect(error.details).toBe("session_id: must not be empty");
    expect(error.metadata.get("pg-field")).toEqual(["session_id"]);
  });

  it("maps typed errors with their reason and hides untyped ones", async () => {
    const full = (await resolve("full").catch((e: unknown) => e)) as ServiceError;
    expect(full.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(full.metadata.get("pg-reason")).toEqual(["session_full"]);
    const boom = (await resolve("boom").catch((e: unknown) => e)) as ServiceError;
    expect(boom.code).toBe(status.INTERNAL);
    expect(boom.details).toBe("internal error");
  });

  it("enforces the client deadline", async () => {
    const error = (await resolve("slow", 100).catch((e: unknown) => e)) as ServiceError;
    expect(error.code).toBe(status.DEADLINE_EXCEEDED);
  });

  it("does not retry non-idempotent calls and retries idempotent ones only on UNAVAILABLE", async () => {
    const dead = new RulesSnapshotClient("127.0.0.1:1", credentials.createInsecure());
    const before = calls;
    const error = (await callUnary(
      dead,
      dead.resolve,
      { sessionId: "x", workspace: "/w", compactionGeneration: 0, embed: false, locale: "" },
      { deadlineMs: 1_000, idempotent: true, maxAttempts: 2 },
    ).catch((e: unknown) => e)) as ServiceError;
    expect(error.code).toBe(status.UNAVAILABLE);
    dead.close();
    await resolve("").catch(() => undefined);
    expect(calls - before).toBe(1);
    expect(new Metadata().get("x")).toEqual([]);
  });
});
