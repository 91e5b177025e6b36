// openSealedEvent and the DataKeyClient against a real gRPC server on loopback whose GetDataKeys is a
// fake: what reaches the server (ids per call, the bearer token, deadlines) is checked on its side.

import type { ServerUnaryCall } from "@grpc/grpc-js";
import { UnavailableError, ValidationError } from "@prefix-guard/errors";
import { newDataKey, sealFields } from "@prefix-guard/events";
import { type GrpcServerOptions, type RunningGrpcServer, startGrpcServer } from "@prefix-guard/grpc";
import { localTestAuthenticator, openToEveryRole, streamsEndingAtOnce } from "@prefix-guard/grpc/testing";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import {
  type DataKey,
  type GetDataKeysRequest,
  SessionEventsService,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createDataKeyClient, type DataKeyClient, openSealedEvent } from "./index";

// @prefix-guard/logging is not a dependency of this package: a logger whose every method is a no-op.
const silentLogger = (): GrpcServerOptions["logger"] => {
  const quiet: object = new Proxy({}, { get: () => () => quiet });
  return quiet as GrpcServerOptions["logger"];
};

const text = (value: string) => ({ part: { $case: "text" as const, value: { text: value } } });

function saved(sessionId: string, seq: number, key: { keyId: string; key: Uint8Array }, words: string): SessionEvent {
  return {
    eventId: `e-${sessionId}-${seq}`,
    sessionId,
    seq,
    occurredAtMs: 1_000,
    schemaVersion: 2,
    type: "MessageSaved",
    payload: {
      $case: "messageSaved",
      value: {
        messageId: `m${seq}`,
        role: Role.ROLE_USER,
        content: [],
        thinkingChars: 0,
        localDate: "2026-10-12",
        sealed: sealFields(key, sessionId, seq, { content: [text(words)] }),
      },
    },
  };
}

function created(sessionId: string, key: { keyId: string; key: Uint8Array }): SessionEvent {
  return {
    eventId: `e-${sessionId}-1`,
    sessionId,
    seq: 1,
    occurredAtMs: 1_000,
    schemaVersion: 2,
    type: "SessionCreated",
    payload: {
      $case: "sessionCreated",
      value: {
        owner: "u1",
        workspace: "/w",
        timezone: "Asia/Shanghai",
        kind: SessionKind.SESSION_KIND_MAIN,
        parentSessionId: "",
        inheritedSummaryFrom: "prev",
        inheritedSummary: "",
        locale: "",
        scope: "",
        sealed: sealFields(key, sessionId, 1, { inheritedSummary: "上次聊到压测" }),
      },
    },
  };
}

const contentOf = (event: SessionEvent | undefined) =>
  event?.payload?.$case === "messageSaved" ? event.payload.value.content : undefined;

describe("openSealedEvent", () => {
  const key = { sessionId: "811", ...newDataKey(), erased: false };

  it("fills the plaintext fields from the seal and clears it", () => {
    const opened = openSealedEvent(saved("811", 2, key, "压测重试"), key);
    expect(contentOf(opened)).toMatchObject([text("压测重试")]);
    expect(opened.payload?.value).toHaveProperty("sealed", undefined);
    const session = openSealedEvent(created("811", key), key);
    expect(session.payload?.$case === "sessionCreated" && session.payload.value.inheritedSummary).toBe("上次聊到压测");
  });

  it("reads an erased session's content as empty, and refuses another session's key or changed bytes", () => {
    const erased = openSealedEvent(saved("811", 2, key, "压测"), {
      sessionId: "811",
      keyId: key.keyId,
      key: new Uint8Array(),
      erased: true,
    });
    expect(contentOf(erased)).toEqual([]);
    expect(() => openSealedEvent(saved("818", 2, key, "x"), key)).toThrow(ValidationError);
    const tampered = saved("811", 3, key, "压测");
    if (tampered.payload?.$case !== "messageSaved" || tampered.payload.value.sealed === undefined) throw new Error();
    tampered.payload.value.sealed.ciphertext[0] = (tampered.payload.value.sealed.ciphertext[0] ?? 0) ^ 1;
    expect(() => openSealedEvent(tampered, key)).toThrow(/cannot be opened/);
  });
});

describe("DataKeyClient over real gRPC", () => {
  const keys = new Map<string, DataKey>();
  const calls: { ids: string[]; authorization: unknown; deadline: unknown }[] = [];
  let failNext = 0;
  let server: RunningGrpcServer;
  let client: DataKeyClient;
  const notUsed = async () => {
    throw new Error("not used by these tests");
  };

  beforeAll(async () => {
    server = await startGrpcServer({
      host: "127.0.0.1",
      port: 0,
      logger: silentLogger(),
      authenticator: localTestAuthenticator(),
      services: [
        {
          name: "prefixguard.sessionevents.v1.SessionEvents",
          definition: SessionEventsService,
          access: openToEveryRole(SessionEventsService),
          streams: streamsEndingAtOnce(SessionEventsService),
          methods: {
            getDataKeys: async (request: GetDataKeysRequest, call: ServerUnaryCall<never, never>) => {
              calls.push({
                ids: request.sessionIds,
                authorization: call.metadata.get("authorization")[0],
                deadline: call.getDeadline(),
              });
              if (failNext > 0) {
                failNext -= 1;
                throw new UnavailableError("restarting");
              }
              // Answered out of order: the client matches by id.
              return {
                keys: [...request.sessionIds].reverse().map(
                  (sessionId) =>
                    keys.get(sessionId) ?? {
                      sessionId,
                      keyId: "",
                      key: Buffer.alloc(0),
                      erased: sessionId === "gone",
                    },
                ),
              };
            },
            createSession: notUsed,
            saveMessage: notUsed,
            deleteMessage: notUsed,
            commitCompaction: notUsed,
            deleteSession: notUsed,
            promoteSideTask: notUsed,
            readEvents: notUsed,
            getSession: notUsed,
            listMessages: notUsed,
          },
        },
      ],
    });
    client = createDataKeyClient({ sessionEvents: server.address, bearerToken: "subscriber-token", deadlineMs: 2_000 });
  });
  afterAll(async () => {
    client.close();
    await server.shutdown();
  });
  beforeEach(() => {
    calls.length = 0;
  });

  it("sends the bearer token and a deadline, 100 ids per call, and answers in request order", async () => {
    const ids = Array.from({ length: 230 }, (_, i) => `s${i}`);
    for (const sessionId of ids.slice(0, 5)) {
      const key = newDataKey();
      keys.set(sessionId, { sessionId, keyId: key.keyId, key: Buffer.from(key.key), erased: false });
    }
    const answer = await client.getDataKeys(ids);
    expect(calls.map((call) => call.ids.length)).toEqual([100, 100, 30]);
    expect(new Set(calls.map((call) => call.authorization))).toEqual(new Set(["Bearer subscriber-token"]));
    // grpc-js reports "no deadline" as Infinity.
    for (const call of calls) expect(Number.isFinite(Number(call.deadline))).toBe(true);
    expect(answer.map((key) => key.sessionId)).toEqual(ids);
    expect(answer[0]?.key.length).toBe(32);
    expect(answer[5]?.key.length).toBe(0);
  });

  it("retries UNAVAILABLE (reading keys changes nothing)", async () => {
    failNext = 1;
    await client.getDataKeys(["s0"]);
    expect(calls).toHaveLength(2);
  });

  it("openEvents fetches once for the sealed events' sessions and opens them; erased ones read as empty", async () => {
    const live = newDataKey();
    keys.set("live", { sessionId: "live", keyId: live.keyId, key: Buffer.from(live.key), erased: false });
    const plain: SessionEvent = { ...saved("plain", 2, live, "x"), schemaVersion: 1 };
    if (plain.payload?.$case === "messageSaved")
      plain.payload = {
        $case: "messageSaved",
        value: { ...plain.payload.value, content: [text("明文")], sealed: undefined },
      };
    const events = [
      saved("live", 2, live, "你好"),
      saved("gone", 2, newDataKey(), "已删除"),
      plain,
      saved("live", 3, live, "再见"),
    ];
    const opened = await client.openEvents(events);
    expect(calls.map((call) => [...call.ids].sort())).toEqual([["gone", "live"]]);
    expect(opened.map(contentOf)).toMatchObject([[text("你好")], [], [text("明文")], [text("再见")]]);
    expect(opened[2]).toBe(plain);
  });
});
