// The harness client against real gRPC servers on loopback with fake handlers: what reaches the
// server (min_seq, attempts, metadata, connections) is counted on the server side.
import type { ServerUnaryCall } from "@grpc/grpc-js";
import { Metadata } from "@grpc/grpc-js";
import {
  AlreadyExistsError,
  ConflictError,
  DeadlineExceededError,
  FailedPreconditionError,
  ResourceExhaustedError,
  UnavailableError,
  ValidationError,
} from "@prefix-guard/errors";
import {
  type GrpcServerOptions,
  insecureCredentials,
  type RunningGrpcServer,
  type ServiceRegistration,
  startGrpcServer,
} from "@prefix-guard/grpc";
import { localTestAuthenticator, openToEveryRole, streamsEndingAtOnce } from "@prefix-guard/grpc/testing";
import {
  type BuildCompactionRequestRequest,
  type BuildCompactionRequestResponse,
  type BuildRequestRequest,
  type BuildRequestResponse,
  PromptAssemblyService,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import { CacheMonitorService, type RecordUsageRequest } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import {
  type CreateSessionRequest,
  type GetSessionRequest,
  type SaveMessageRequest,
  type Session,
  SessionEventsService,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createHarnessClient, type HarnessClient } from "./index";

type AnyCall = ServerUnaryCall<never, never>;

// @prefix-guard/logging is not a dependency of this package: a logger whose every method is a no-op.
const silentLogger = (): GrpcServerOptions["logger"] => {
  const quiet: object = new Proxy({}, { get: () => () => quiet });
  return quiet as GrpcServerOptions["logger"];
};

/** In-memory fakes of the three services, with per-session scripted failures and call logs. */
class FakeBackends {
  readonly sessions = new Map<string, Session>();
  readonly lastSeq = new Map<string, number>();
  readonly saves: SaveMessageRequest[] = [];
  readonly builds: BuildRequestRequest[] = [];
  readonly compactions: BuildCompactionRequestRequest[] = [];
  readonly usages: RecordUsageRequest[] = [];
  readonly calls = new Map<string, number>();
  readonly peers: string[] = [];
  readonly authorizations: string[] = [];
  /** session id → how many more calls of that method fail with UNAVAILABLE. */
  readonly failNext = new Map<string, number>();
  /** CreateSession stores the session, then loses the answer (UNAVAILABLE) for these ids, once. */
  readonly loseCreateAnswer = new Set<string>();

  private count(method: string, sessionId: string, call: AnyCall): void {
    const key = `${method}:${sessionId}`;
    this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
    this.peers.push(call.getPeer());
    const authorization = call.metadata.get("authorization")[0];
    if (typeof authorization === "string") this.authorizations.push(authorization);
    const failures = this.failNext.get(key) ?? 0;
    if (failures > 0) {
      this.failNext.set(key, failures - 1);
      throw new UnavailableError("backend restarting");
    }
  }

  callsOf(method: string, sessionId: string): number {
    return this.calls.get(`${method}:${sessionId}`) ?? 0;
  }

  reset(): void {
    for (const list of [this.saves, this.builds, this.compactions, this.usages, this.peers, this.authorizations])
      list.length = 0;
    this.calls.clear();
    this.failNext.clear();
  }

  private notUsed = async () => {
    throw new Error("not used by these tests");
  };

  sessionEvents(): ServiceRegistration {
    return {
      name: "prefixguard.sessionevents.v1.SessionEvents",
      definition: SessionEventsService,
      access: openToEveryRole(SessionEventsService),
      streams: streamsEndingAtOnce(SessionEventsService),
      methods: {
        createSession: async (request: CreateSessionRequest, call: AnyCall) => {
          this.count("createSession", request.sessionId, call);
          const sessionId = request.sessionId || `gen-${this.sessions.size + 1}`;
          if (this.sessions.has(sessionId)) throw new AlreadyExistsError(`session ${sessionId} already exists`);
          const session: Session = {
            sessionId,
            owner: request.owner,
            workspace: request.workspace,
            timezone: request.timezone || "Asia/Shanghai",
            kind: request.kind || SessionKind.SESSION_KIND_MAIN,
            parentSessionId: request.parentSessionId,
            lastSeq: 1,
            compactionGeneration: 0,
            compactionBoundaryMessageId: "",
            summary: "",
            inheritedSummaryFrom: "",
            contentChars: 0,
            serializedBytes: 0,
            createdAtMs: 1,
            deleted: false,
            ended: false,
            locale: "",
          };
          this.sessions.set(sessionId, session);
          this.lastSeq.set(sessionId, 1);
          if (this.loseCreateAnswer.delete(sessionId)) throw new UnavailableError("connection reset after commit");
          return { session, seq: 1 };
        },
        saveMessage: async (request: SaveMessageRequest, call: AnyCall) => {
          this.count("saveMessage", request.sessionId, call);
          this.saves.push(request);
          const first = request.content[0]?.part;
          if (first?.$case === "text" && first.value.text === "")
            throw new ValidationError("content[0].text", "must not be empty");
          if (request.sessionId === "full")
            throw new ResourceExhaustedError("session is full", { reason: "session_full" });
          const last = this.lastSeq.get(request.sessionId) ?? 40;
          if (request.expectedSeq !== undefined && request.expectedSeq !== last)
            throw new ConflictError(`expected seq ${request.expectedSeq}, session is at ${last}`, {
              reason: "seq_mismatch",
            });
          this.lastSeq.set(request.sessionId, last + 1);
          return { seq: last + 1, messageId: `m${last + 1}`, createdAtMs: 1, localDate: "2026-10-12" };
        },
        getSession: async (request: GetSessionRequest, call: AnyCall) => {
          this.count("getSession", request.sessionId, call);
          const session = this.sessions.get(request.sessionId);
          if (session === undefined) throw new Error("no such session");
          return session;
        },
        deleteMessage: this.notUsed,
        commitCompaction: this.notUsed,
        deleteSession: this.notUsed,
        promoteSideTask: this.notUsed,
        readEvents: this.notUsed,
        listMessages: this.notUsed,
        getDataKeys: this.notUsed,
      },
    };
  }

  promptAssembly(): ServiceRegistration {
    return {
      name: "prefixguard.assembly.v1.PromptAssembly",
      definition: PromptAssemblyService,
      access: openToEveryRole(PromptAssemblyService),
      methods: {
        buildRequest: async (request: BuildRequestRequest, call: AnyCall): Promise<BuildRequestResponse> => {
          this.count("buildRequest", request.sessionId, call);
          this.builds.push(request);
          if (request.sessionId === "slow") await new Promise((r) => setTimeout(r, 1_000));
          return {
            requestId: `req-${request.sessionId}-${request.minSeq}`,
            bodyJson: JSON.stringify({ model: request.model }),
            sections: [],
            toolsHash: "",
            checkpointDue: false,
            estimatedTokens: 10,
            rulesDecision: Decision.DECISION_PINNED,
            dateNotices: [],
            anchorDate: "2026-10-12",
            projectionSeq: request.minSeq,
            usageProvider: "anthropic",
            cacheRetentionApplied: "",
            cacheModeApplied: "",
            diagnosticsApplied: false,
          };
        },
        buildCompactionRequest: async (
          request: BuildCompactionRequestRequest,
          call: AnyCall,
        ): Promise<BuildCompactionRequestResponse> => {
          const build = request.request;
          this.count("buildCompactionRequest", build?.sessionId ?? "", call);
          this.compactions.push(request);
          return {
            requestId: `compact-${build?.sessionId}-${build?.minSeq}`,
            bodyJson: JSON.stringify({ model: build?.model }),
            boundaryMessageId: "m-40",
            expectedGeneration: 0,
            history: undefined,
            estimatedTokens: 10,
            rulesDecision: Decision.DECISION_PINNED,
            anchorDate: "2026-10-12",
            dateNotices: [],
            projectionSeq: build?.minSeq ?? 0,
            turnsToSummarise: 20,
            usageProvider: "anthropic",
          };
        },
        rebuildProjection: this.notUsed,
      },
    };
  }

  cacheMonitor(): ServiceRegistration {
    return {
      name: "prefixguard.monitor.v1.CacheMonitor",
      definition: CacheMonitorService,
      access: openToEveryRole(CacheMonitorService),
      methods: {
        recordUsage: async (request: RecordUsageRequest, call: AnyCall) => {
          this.count("recordUsage", request.sessionId, call);
          this.usages.push(request);
          return { cost: (request.usage?.promptTokens ?? 0) / 1000, duplicate: false, idempotencyKey: "k" };
        },
        listCollapses: this.notUsed,
        traceSession: this.notUsed,
        adviseRetention: this.notUsed,
      },
    };
  }
}

const build = { model: "claude-test", wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES, workspace: "/w" };
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (error: unknown) => error as Error,
  );

describe("harness client over real gRPC (three servers)", () => {
  const fakes = new FakeBackends();
  const servers: RunningGrpcServer[] = [];
  let client: HarnessClient;
  let tokenCalls = 0;

  beforeAll(async () => {
    for (const service of [fakes.sessionEvents(), fakes.promptAssembly(), fakes.cacheMonitor()]) {
      servers.push(
        await startGrpcServer({
          host: "127.0.0.1",
          port: 0,
          logger: silentLogger(),
          services: [service],
          authenticator: localTestAuthenticator(),
        }),
      );
    }
    const [sessionEvents, promptAssembly, cacheMonitor] = servers.map((s) => s.address) as [string, string, string];
    client = createHarnessClient({
      sessionEvents,
      promptAssembly,
      cacheMonitor,
      deadlineMs: 2_000,
      metadata: () => {
        tokenCalls += 1;
        const metadata = new Metadata();
        metadata.set("authorization", `Bearer token-${tokenCalls}`);
        return metadata;
      },
    });
  });
  afterAll(async () => {
    client.close();
    for (const server of servers) await server.shutdown();
  });
  beforeEach(() => fakes.reset());

  it("runTurn saves the user message and builds with min_seq = the seq SaveMessage returned", async () => {
    const first = await client.runTurn("811", "压测重试", build);
    const second = await client.runTurn("811", [{ part: { $case: "text", value: { text: "继续" } } }], build);
    expect(fakes.saves.map((s) => [s.role, s.content.length, s.content[0]?.part])).toMatchObject([
      [Role.ROLE_USER, 1, { $case: "text", value: { text: "压测重试" } }],
      [Role.ROLE_USER, 1, { $case: "text", value: { text: "继续" } }],
    ]);
    expect(fakes.builds.map((b) => b.minSeq)).toEqual([first.saved.seq, second.saved.seq]);
    expect(second.saved.seq).toBe(first.saved.seq + 1);
    expect(second.build.projectionSeq).toBe(second.saved.seq);
    expect(fakes.builds[0]).toMatchObject({ model: "claude-test", workspace: "/w", embed: false, locale: "" });
  });

  it("buildCompactionRequest sends the build options with keep_recent_turns and retries on UNAVAILABLE", async () => {
    fakes.failNext.set("buildCompactionRequest:811", 1);
    const response = await client.buildCompactionRequest("811", 42, { ...build, keepRecentTurns: 4 });
    expect(response).toMatchObject({ requestId: "compact-811-42", boundaryMessageId: "m-40", turnsToSummarise: 20 });
    expect(fakes.callsOf("buildCompactionRequest", "811")).toBe(2);
    expect(fakes.compactions.at(-1)).toMatchObject({
      keepRecentTurns: 4,
      request: { sessionId: "811", minSeq: 42, model: "claude-test", workspace: "/w" },
    });
  });

  it("retries BuildRequest on UNAVAILABLE until it succeeds, and gives up after maxAttempts", async () => {
    fakes.failNext.set("buildRequest:flaky", 2);
    const response = await client.buildRequest("flaky", 7, build);
    expect(response.requestId).toBe("req-flaky-7");
    expect(fakes.callsOf("buildRequest", "flaky")).toBe(3);

    fakes.failNext.set("buildRequest:down", 10);
    const error = await failure(client.buildRequest("down", 7, build));
    expect(error).toBeInstanceOf(UnavailableError);
    expect(fakes.callsOf("buildRequest", "down")).toBe(3);
  });

  it("recordRawUsage sends the provider's usage JSON untouched as raw, with the record's identity", async () => {
    const usageJson =
      '{"input_tokens":12,"cache_read_input_tokens":4096,"cache_creation_input_tokens":0,"output_tokens":7}';
    const raw = { provider: "anthropic", usageJson, requestId: "r-raw", model: "claude-sonnet-4-5", calledAtMs: 5 };
    await client.recordRawUsage("raw", { ...raw, providerResponseId: "msg_01", unbuilt: true });
    expect(fakes.usages.at(-1)).toMatchObject({
      sessionId: "raw",
      usage: undefined,
      raw: { ...raw, reportedCost: undefined },
      idempotencyKey: "",
      providerResponseId: "msg_01",
      unbuilt: true,
    });
    await client.recordRawUsage("raw", { ...raw, idempotencyKey: "call-1" });
    expect(fakes.usages.at(-1)).toMatchObject({ idempotencyKey: "call-1", providerResponseId: "", unbuilt: false });
  });

  it("never retries SaveMessage on UNAVAILABLE; retries RecordUsage, idempotent by key (docs/decisions/usage-identity.md)", async () => {
    fakes.failNext.set("saveMessage:flaky", 1);
    const saveError = await failure(client.saveMessage({ sessionId: "flaky", role: Role.ROLE_USER, content: "hi" }));
    expect(saveError).toBeInstanceOf(UnavailableError);
    expect(fakes.callsOf("saveMessage", "flaky")).toBe(1);

    fakes.failNext.set("recordUsage:flaky", 1);
    const usage = {
      requestId: "r1",
      model: "m",
      promptTokens: 1000,
      cachedTokens: 900,
      completionTokens: 5,
      calledAtMs: 1,
    };
    // One UNAVAILABLE, then the retry lands: the server's key makes a landed first attempt harmless.
    expect((await client.recordUsage("flaky", { ...usage, providerResponseId: "msg_r1" })).cost).toBe(1);
    expect(fakes.callsOf("recordUsage", "flaky")).toBe(2);
    expect(fakes.usages.map((u) => [u.sessionId, u.usage?.requestId, u.providerResponseId])).toEqual([
      ["flaky", "r1", "msg_r1"],
    ]);
    // Still down after maxAttempts (3): the error surfaces.
    fakes.failNext.set("recordUsage:flaky", 5);
    expect(await failure(client.recordUsage("flaky", usage))).toBeInstanceOf(UnavailableError);
    expect(fakes.callsOf("recordUsage", "flaky")).toBe(5);
  });

  it("respects the deadline and does not retry a DEADLINE_EXCEEDED BuildRequest", async () => {
    const started = Date.now();
    const error = await failure(client.buildRequest("slow", 1, build, { deadlineMs: 150 }));
    const elapsed = Date.now() - started;
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(elapsed).toBeGreaterThanOrEqual(140);
    expect(elapsed).toBeLessThan(900);
    expect(fakes.callsOf("buildRequest", "slow")).toBe(1);
  });

  it("maps INVALID_ARGUMENT to ValidationError with the field from pg-field", async () => {
    const error = await failure(client.saveMessage({ sessionId: "811", role: Role.ROLE_USER, content: "" }));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe("content[0].text");
    expect(error.message).toBe("content[0].text: must not be empty");
  });

  it("maps ABORTED to ConflictError and RESOURCE_EXHAUSTED to ResourceExhaustedError with the reason", async () => {
    const saved = await client.saveMessage({ sessionId: "cas", role: Role.ROLE_USER, content: "a" });
    const conflict = await failure(
      client.saveMessage({ sessionId: "cas", role: Role.ROLE_ASSISTANT, content: "b", expectedSeq: saved.seq - 1 }),
    );
    expect(conflict).toBeInstanceOf(ConflictError);
    expect((conflict as ConflictError).reason).toBe("seq_mismatch");
    const ok = await client.saveMessage({
      sessionId: "cas",
      role: Role.ROLE_ASSISTANT,
      content: "b",
      expectedSeq: saved.seq,
    });
    expect(ok.seq).toBe(saved.seq + 1);

    const full = await failure(client.saveMessage({ sessionId: "full", role: Role.ROLE_USER, content: "x" }));
    expect(full).toBeInstanceOf(ResourceExhaustedError);
    expect((full as ResourceExhaustedError).reason).toBe("session_full");
  });

  it("sends the metadata function's result with every call", async () => {
    const before = tokenCalls;
    await client.runTurn("818", "hello", build);
    expect(tokenCalls - before).toBe(2);
    expect(fakes.authorizations).toEqual([`Bearer token-${before + 1}`, `Bearer token-${before + 2}`]);
  });

  it("sends bearerToken as authorization on every call, asking a token function once per call", async () => {
    const [sessionEvents, promptAssembly, cacheMonitor] = servers.map((s) => s.address) as [string, string, string];
    let issued = 0;
    const fixed = createHarnessClient({
      sessionEvents,
      promptAssembly,
      cacheMonitor,
      bearerToken: "s3cret-s3cret-s3cret",
    });
    const refreshed = createHarnessClient({
      sessionEvents,
      promptAssembly,
      cacheMonitor,
      bearerToken: () => `rotating-${++issued}`,
    });
    try {
      await fixed.runTurn("819", "hello", build);
      await refreshed.runTurn("819", "hello", build);
      expect(fakes.authorizations).toEqual([
        "Bearer s3cret-s3cret-s3cret",
        "Bearer s3cret-s3cret-s3cret",
        "Bearer rotating-1",
        "Bearer rotating-2",
      ]);
    } finally {
      fixed.close();
      refreshed.close();
    }
  });

  it("answers plain objects: no _unknownFields at any depth", async () => {
    const turn = await client.runTurn("820", "hello", build);
    const usage = await client.recordUsage("820", {
      requestId: turn.build.requestId,
      model: "claude-test",
      promptTokens: 1000,
      cachedTokens: 0,
      completionTokens: 1,
      calledAtMs: 1,
    });
    const created = await client.createSession({ sessionId: "c-820", owner: "u1", workspace: "/w" });
    for (const answer of [turn, usage, created, await client.getSession("c-820")])
      expect(JSON.stringify(answer)).not.toContain("_unknownFields");
    expect(usage).toStrictEqual({ cost: 1, collapse: undefined, duplicate: false, idempotencyKey: "k" });
  });

  it("rejects TLS options that cannot make a channel", () => {
    const addresses = { sessionEvents: "a:1", promptAssembly: "a:2", cacheMonitor: "a:3" };
    const both = () => createHarnessClient({ ...addresses, tls: {}, credentials: insecureCredentials() });
    expect(both).toThrow(ValidationError);
    const halfMtls = () => createHarnessClient({ ...addresses, tls: { certChain: "-----BEGIN CERTIFICATE-----" } });
    expect(halfMtls).toThrow(/certChain and privateKey go together/);
    createHarnessClient({ ...addresses, tls: {} }).close();
  });

  it("retries CreateSession with a caller-chosen id and takes ALREADY_EXISTS of its own landed attempt as success", async () => {
    fakes.loseCreateAnswer.add("c-811");
    const created = await client.createSession({ sessionId: "c-811", owner: "u1", workspace: "/w" });
    expect(created.seq).toBe(1);
    expect(created.session).toMatchObject({ sessionId: "c-811", owner: "u1", timezone: "Asia/Shanghai" });
    expect(fakes.callsOf("createSession", "c-811")).toBe(2);
    expect(fakes.callsOf("getSession", "c-811")).toBe(1);
  });

  it("keeps ALREADY_EXISTS when the existing session differs, and never retries a generated id", async () => {
    await client.createSession({ sessionId: "c-taken", owner: "someone-else", workspace: "/w" });
    fakes.failNext.set("createSession:c-taken", 1);
    const taken = await failure(client.createSession({ sessionId: "c-taken", owner: "u1", workspace: "/w" }));
    expect(taken).toBeInstanceOf(AlreadyExistsError);
    expect(fakes.callsOf("createSession", "c-taken")).toBe(3);
    // The first answer, without a preceding UNAVAILABLE, is not mistaken for our own attempt.
    const direct = await failure(
      client.createSession({ sessionId: "c-taken", owner: "someone-else", workspace: "/w" }),
    );
    expect(direct).toBeInstanceOf(AlreadyExistsError);

    fakes.failNext.set("createSession:", 1);
    const generated = await failure(client.createSession({ owner: "u1", workspace: "/w" }));
    expect(generated).toBeInstanceOf(UnavailableError);
    expect(fakes.callsOf("createSession", "")).toBe(1);
  });
});

describe("harness client connection reuse", () => {
  const fakes = new FakeBackends();
  let server: RunningGrpcServer;

  beforeAll(async () => {
    // One process serving all three services, as the embedded all-in-one does.
    server = await startGrpcServer({
      authenticator: localTestAuthenticator(),
      host: "127.0.0.1",
      port: 0,
      logger: silentLogger(),
      services: [fakes.sessionEvents(), fakes.promptAssembly(), fakes.cacheMonitor()],
    });
  });
  afterAll(async () => {
    await server.shutdown();
  });

  const connect = () =>
    createHarnessClient({
      sessionEvents: server.address,
      promptAssembly: server.address,
      cacheMonitor: server.address,
    });

  it("sends many calls to the three services over one connection, and a second client opens its own", async () => {
    const client = connect();
    for (let turn = 0; turn < 10; turn++) {
      const { build: built } = await client.runTurn("reuse", `turn ${turn}`, build);
      await client.recordUsage("reuse", {
        requestId: built.requestId,
        model: "m",
        promptTokens: 100,
        cachedTokens: 90,
        completionTokens: 1,
        calledAtMs: turn,
      });
    }
    await Promise.all(Array.from({ length: 20 }, (_, i) => client.buildRequest("reuse", i + 1, build)));
    expect(fakes.peers).toHaveLength(50);
    expect(new Set(fakes.peers).size).toBe(1);

    const other = connect();
    await other.buildRequest("reuse", 1, build);
    const otherPeer = fakes.peers.at(-1);
    expect(otherPeer).not.toBe(fakes.peers[0]);
    other.close();

    client.close();
    client.close();
    expect(await failure(client.buildRequest("reuse", 1, build))).toBeInstanceOf(FailedPreconditionError);
    expect(fakes.peers).toHaveLength(51);
  });
});
