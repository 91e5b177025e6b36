// Security from the outside: TLS with client certificates, principals named by bearer token or by
// certificate, health left open for probes, and the tenant check on summary inheritance, all
// against a real session-events reading a principals file.

import { readFileSync } from "node:fs";
import { ChannelCredentials, type ServiceError, status } from "@grpc/grpc-js";
import { bearerMetadata, callUnary, checkHealth } from "@prefix-guard/grpc";
import { silentLogger } from "@prefix-guard/logging";
import { SessionKind } from "@prefix-guard/proto/common/v1/common";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { loadSessionEventsConfig, startSessionEvents } from "@prefix-guard/session-events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PrincipalsFixture, testToken, writePrincipalsFile } from "./principals-fixture";
import { openMemoryBus, userTextMessage } from "./support";
import { CLIENT_CERTIFICATE_NAMES, makeTlsFixture, serverTlsEnv, type TlsFixture } from "./tls-fixtures";

const TEAM_A_TOKEN = testToken("harness-a");
const TEAM_B_TOKEN = testToken("harness-b");
const SRE_TOKEN = testToken("sre");

describe("gRPC security (TLS, mTLS, principals) and tenant checks, from the outside", () => {
  let tls: TlsFixture;
  let principals: PrincipalsFixture;
  let address: string;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    tls = makeTlsFixture();
    // Two tenants whose owners share a name: only the scope keeps their sessions apart. The fixture's
    // "peer" client certificate names the peer principal; its "client" certificate names no one.
    principals = writePrincipalsFile([
      { name: "harness-a", roles: ["harness"], scope: "team-a", owners: ["alice", "mallory"], tokens: [TEAM_A_TOKEN] },
      { name: "harness-b", roles: ["harness"], scope: "team-b", owners: ["alice"], tokens: [TEAM_B_TOKEN] },
      { name: "sre", roles: ["sre"], tokens: [SRE_TOKEN] },
      { name: "prompt-assembly", roles: ["peer"], certificateNames: [CLIENT_CERTIFICATE_NAMES.peer] },
    ]);
    const memory = await openMemoryBus();
    const bus = memory.bus;
    const config = loadSessionEventsConfig({
      GRPC_PORT: "0",
      DATABASE_URL: "sqlite::memory:",
      ...serverTlsEnv(tls),
      ...principals.env(),
    });
    const service = await startSessionEvents(config, { bus, logger: silentLogger() });
    address = service.address;
    stop = async () => {
      await service.stop();
      await memory.close();
      principals.remove();
    };
  });
  afterAll(async () => stop?.());

  const mtls = () =>
    ChannelCredentials.createSsl(readFileSync(tls.caCert), readFileSync(tls.clientKey), readFileSync(tls.clientCert));
  const client = (credentials: ChannelCredentials) =>
    new SessionEventsClient(address, credentials, { "grpc.ssl_target_name_override": "localhost" });
  const getSession = (c: SessionEventsClient, token?: string) =>
    callUnary(c, c.getSession, { sessionId: "nope" }, { deadlineMs: 3_000, metadata: bearerMetadata(token) }).catch(
      (e: unknown) => e as ServiceError,
    );

  const peerMtls = () =>
    ChannelCredentials.createSsl(readFileSync(tls.caCert), readFileSync(tls.peerKey), readFileSync(tls.peerCert));
  const codeOf = async (pending: Promise<unknown>) => ((await pending) as ServiceError).code;
  const reasonOf = (error: ServiceError) => error.metadata?.get("pg-reason")[0];

  it("rejects calls without a token or with a wrong one, accepts each principal's token", async () => {
    const c = client(mtls());
    const missing = (await getSession(c)) as ServiceError;
    expect(missing.code).toBe(status.UNAUTHENTICATED);
    // The client certificate is valid for TLS but names no principal: it authenticates nobody.
    expect(reasonOf(missing)).toBe("unknown_certificate");
    const wrong = (await getSession(c, testToken("wrong"))) as ServiceError;
    expect(wrong.code).toBe(status.UNAUTHENTICATED);
    expect(reasonOf(wrong)).toBe("invalid_token");
    expect(await codeOf(getSession(c, "short"))).toBe(status.UNAUTHENTICATED);
    // Authenticated and admitted: the call reaches the handler, which says the session does not exist.
    expect(await codeOf(getSession(c, TEAM_A_TOKEN))).toBe(status.NOT_FOUND);
    expect(await codeOf(getSession(c, TEAM_B_TOKEN))).toBe(status.NOT_FOUND);
    // Authenticated, but GetSession is not an SRE's: the role is checked after the token.
    const sre = (await getSession(c, SRE_TOKEN)) as ServiceError;
    expect(sre.code).toBe(status.PERMISSION_DENIED);
    expect(reasonOf(sre)).toBe("role_required");
    c.close();
  });

  it("names a principal by its client certificate's SAN alone, with its role and no more", async () => {
    const c = client(peerMtls());
    const md = { deadlineMs: 3_000 };
    // The peer may read a session (here: a missing one), but not write one.
    expect(await codeOf(getSession(c))).toBe(status.NOT_FOUND);
    const write = await callUnary(c, c.saveMessage, userTextMessage("nope", "hi"), md).catch(
      (e: unknown) => e as ServiceError,
    );
    expect((write as ServiceError).code).toBe(status.PERMISSION_DENIED);
    // A token sent along wins over the certificate, and a wrong one never falls back to it.
    expect(await codeOf(getSession(c, testToken("wrong")))).toBe(status.UNAUTHENTICATED);
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
    expect(((await getSession(plain, TEAM_A_TOKEN)) as ServiceError).code).toBe(status.UNAVAILABLE);
    plain.close();
    const noClientCert = client(ChannelCredentials.createSsl(readFileSync(tls.caCert)));
    expect(((await getSession(noClientCert, TEAM_A_TOKEN)) as ServiceError).code).toBe(status.UNAVAILABLE);
    noClientCert.close();
    const wrongCa = client(
      ChannelCredentials.createSsl(
        readFileSync(tls.otherCaCert),
        readFileSync(tls.clientKey),
        readFileSync(tls.clientCert),
      ),
    );
    expect(((await getSession(wrongCa, TEAM_A_TOKEN)) as ServiceError).code).toBe(status.UNAVAILABLE);
    wrongCa.close();
  });

  it("inherits a full session's summary only for the same owner in the same scope, silently otherwise", async () => {
    const c = client(mtls());
    const as = (token: string) => ({ deadlineMs: 5_000, metadata: bearerMetadata(token) });
    const create = (token: string, sessionId: string, owner: string, continuedFromSessionId = "") =>
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
        as(token),
      );
    await create(TEAM_A_TOKEN, "full-1", "alice");
    const saved = await callUnary(c, c.saveMessage, userTextMessage("full-1", "压测重试怎么做"), as(TEAM_A_TOKEN));
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
      as(TEAM_A_TOKEN),
    );
    const mine = await create(TEAM_A_TOKEN, "cont-alice", "alice", "full-1");
    // Same tenant, another owner.
    const otherOwner = await create(TEAM_A_TOKEN, "cont-mallory", "mallory", "full-1");
    // Another tenant whose owner has the same name: the scope is what tells them apart.
    const otherTenant = await create(TEAM_B_TOKEN, "cont-team-b", "alice", "full-1");
    const missing = await create(TEAM_A_TOKEN, "cont-missing", "alice", "does-not-exist");
    expect(mine.session?.summary).toBe("用户在排查压测重试");
    expect(mine.session?.inheritedSummaryFrom).toBe("full-1");
    for (const other of [otherOwner, otherTenant, missing]) {
      expect(other.session?.summary).toBe("");
      expect(other.session?.inheritedSummaryFrom).toBe("");
    }
    // And team b cannot read the session it tried to continue: it is missing as far as b knows.
    const seen = await callUnary(c, c.getSession, { sessionId: "full-1" }, as(TEAM_B_TOKEN)).catch(
      (e: unknown) => e as ServiceError,
    );
    expect((seen as ServiceError).code).toBe(status.NOT_FOUND);
    c.close();
  });
});
