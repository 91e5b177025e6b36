// Security from the outside: TLS with client certificates, per-caller bearer tokens, health left
// open for probes, and the owner check on summary inheritance, all against a real session-events.

import { readFileSync } from "node:fs";
import { ChannelCredentials, type ServiceError, status } from "@grpc/grpc-js";
import { bearerMetadata, callUnary, checkHealth } from "@prefix-guard/grpc";
import { silentLogger } from "@prefix-guard/logging";
import { SessionKind } from "@prefix-guard/proto/common/v1/common";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { loadSessionEventsConfig, startSessionEvents } from "@prefix-guard/session-events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openMemoryBus, userTextMessage } from "./support";
import { makeTlsFixture, serverTlsEnv, type TlsFixture } from "./tls-fixtures";

const HARNESS_TOKEN = "harness-token-0123456789";
const SRE_TOKEN = "sre-token-abcdefghijklmn";

describe("gRPC security (TLS, mTLS, bearer tokens) and tenant checks, from the outside", () => {
  let tls: TlsFixture;
  let address: string;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    tls = makeTlsFixture();
    const memory = await openMemoryBus();
    const bus = memory.bus;
    const config = loadSessionEventsConfig({
      GRPC_PORT: "0",
      DATABASE_URL: "sqlite::memory:",
      ...serverTlsEnv(tls),
      GRPC_AUTH_TOKENS: `harness:${HARNESS_TOKEN},sre:${SRE_TOKEN}`,
    });
    const service = await startSessionEvents(config, { bus, logger: silentLogger() });
    address = service.address;
    stop = async () => {
      await service.stop();
      await memory.close();
    };
  });
  afterAll(async () => stop());

  const mtls = () =>
    ChannelCredentials.createSsl(readFileSync(tls.caCert), readFileSync(tls.clientKey), readFileSync(tls.clientCert));
  const client = (credentials: ChannelCredentials) =>
    new SessionEventsClient(address, credentials, { "grpc.ssl_target_name_override": "localhost" });
  const getSession = (c: SessionEventsClient, token?: string) =>
    callUnary(c, c.getSession, { sessionId: "nope" }, { deadlineMs: 3_000, metadata: bearerMetadata(token) }).catch(
      (e: unknown) => e as ServiceError,
    );

  it("rejects calls without a token or with a wrong one, accepts each configured caller", async () => {
    const c = client(mtls());
    expect(((await getSession(c)) as ServiceError).code).toBe(status.UNAUTHENTICATED);
    expect(((await getSession(c, "wrong-token-but-long-enough")) as ServiceError).code).toBe(status.UNAUTHENTICATED);
    // Authenticated: the call reaches the handler, which says the session does not exist.
    expect(((await getSession(c, HARNESS_TOKEN)) as ServiceError).code).toBe(status.NOT_FOUND);
    expect(((await getSession(c, SRE_TOKEN)) as ServiceError).code).toBe(status.NOT_FOUND);
    c.close();
  });

  it("leaves grpc.health.v1 open without a token, so probes need no secret", async () => {
    expect(
      await checkHealth(address, "prefixguard.sessionevents.v1.SessionEvents", 3_000, mtls(), {
        "grpc.ssl_target_name_override": "localhost",
      }),
    ).toBe("SERVING");
  });

  it("refuses plaintext clients, clients without a certificate, and servers from another CA", async () => {
    const plain = client(ChannelCredentials.createInsecure());
    expect(((await getSession(plain, HARNESS_TOKEN)) as ServiceError).code).toBe(status.UNAVAILABLE);
    plain.close();
    const noClientCert = client(ChannelCredentials.createSsl(readFileSync(tls.caCert)));
    expect(((await getSession(noClientCert, HARNESS_TOKEN)) as ServiceError).code).toBe(status.UNAVAILABLE);
    noClientCert.close();
    const wrongCa = client(
      ChannelCredentials.createSsl(
        readFileSync(tls.otherCaCert),
        readFileSync(tls.clientKey),
        readFileSync(tls.clientCert),
      ),
    );
    expect(((await getSession(wrongCa, HARNESS_TOKEN)) as ServiceError).code).toBe(status.UNAVAILABLE);
    wrongCa.close();
  });

  it("inherits a full session's summary only for the same owner, silently otherwise", async () => {
    const c = client(mtls());
    const md = { deadlineMs: 5_000, metadata: bearerMetadata(HARNESS_TOKEN) };
    const create = (sessionId: string, owner: string, continuedFromSessionId = "") =>
      callUnary(
        c,
        c.createSession,
        {
          sessionId,
          owner,
          workspace: "/w",
          timezone: "Asia/Shanghai",
          kind: SessionKind.SESSION_KIND_MAIN,
          parentSessionId: "",
          continuedFromSessionId,
          personalTerms: [],
          locale: "",
        },
        md,
      );
    await create("full-1", "alice");
    const saved = await callUnary(c, c.saveMessage, userTextMessage("full-1", "压测重试怎么做"), md);
    await callUnary(
      c,
      c.commitCompaction,
      {
        sessionId: "full-1",
        expectedGeneration: 0,
        boundaryMessageId: saved.messageId,
        summary: "用户在排查压测重试",
        personalTerms: [],
      },
      md,
    );
    const mine = await create("cont-alice", "alice", "full-1");
    const theirs = await create("cont-mallory", "mallory", "full-1");
    const missing = await create("cont-missing", "alice", "does-not-exist");
    expect(mine.session?.summary).toBe("用户在排查压测重试");
    expect(mine.session?.inheritedSummaryFrom).toBe("full-1");
    expect(theirs.session?.summary).toBe("");
    expect(theirs.session?.inheritedSummaryFrom).toBe("");
    expect(missing.session?.summary).toBe("");
    c.close();
  });
});
