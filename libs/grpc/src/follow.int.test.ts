// A server stream through startGrpcServer and PeerClient.follow: admitted like a unary call (a
// refusal ends the stream with its status), and kept open by the client: reopened with backoff after
// the server ends it or goes away, until closed.
import { Metadata, type ServerWritableStream, status } from "@grpc/grpc-js";
import { ROLES } from "@prefix-guard/access";
import { PermissionDeniedError } from "@prefix-guard/errors";
import { silentLogger } from "@prefix-guard/logging";
import {
  type FollowedEvents,
  SessionEventsClient,
  SessionEventsService,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterEach, describe, expect, it } from "vitest";
import { createPeerClient, insecureCredentials, type RunningGrpcServer, startGrpcServer } from "./index";
import { localTestAuthenticator } from "./testing";

async function eventually(check: () => boolean, options: { what: string }): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${options.what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const notUsed = Object.fromEntries(
  Object.entries(SessionEventsService)
    .filter(([, method]) => !method.responseStream)
    .map(([name]) => [name, async () => ({})]),
);

/** A SessionEvents whose FollowEvents sends one batch naming its stream's number, then ends it. */
async function serving(port: number, refuse = false): Promise<{ server: RunningGrpcServer; opened: number[] }> {
  const opened: number[] = [];
  const server = await startGrpcServer({
    authenticator: localTestAuthenticator(),
    host: "127.0.0.1",
    port,
    logger: silentLogger(),
    services: [
      {
        name: "prefixguard.sessionevents.v1.SessionEvents",
        definition: SessionEventsService,
        access: Object.fromEntries(Object.keys(SessionEventsService).map((m) => [m, ROLES])),
        methods: notUsed,
        streams: {
          followEvents: (_request: never, call: ServerWritableStream<never, FollowedEvents>) => {
            if (refuse) throw new PermissionDeniedError("not a peer", { reason: "role_required" });
            opened.push(opened.length + 1);
            call.write({ events: [{ sessionId: `stream-${opened.length}`, seq: 1, event: Buffer.from([1]) }] });
            setTimeout(() => call.end(), 20);
          },
        },
      },
    ],
  });
  return { server, opened };
}

describe("PeerClient.follow over a server stream", () => {
  const stops: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
  });

  it("reopens the stream after the server ends it, and after the server comes back; stops when closed", async () => {
    const first = await serving(0);
    const port = first.server.port;
    stops.push(() => first.server.shutdown(100));
    const peer = createPeerClient(
      "session-events",
      (target, credentials) => new SessionEventsClient(target, credentials),
      `127.0.0.1:${port}`,
      { credentials: insecureCredentials(), metadata: new Metadata() },
    );
    stops.push(() => peer.close());
    const received: string[] = [];
    const disconnects: unknown[] = [];
    const following = peer.follow(
      (client) => client.followEvents,
      {},
      {
        onData: (batch: FollowedEvents) => received.push(...batch.events.map((e) => e.sessionId)),
        onDisconnect: (error) => disconnects.push(error),
        backoffMs: [10, 50],
      },
    );
    stops.push(() => following.close());
    await eventually(() => received.length >= 3, { what: "three streams opened one after another" });
    expect(received.slice(0, 3)).toEqual(["stream-1", "stream-2", "stream-3"]);
    expect(disconnects.length).toBeGreaterThanOrEqual(2);

    await first.server.shutdown(100);
    const during = received.length;
    const second = await serving(port);
    stops.push(() => second.server.shutdown(100));
    await eventually(() => second.opened.length >= 1, { what: "the stream reopened on the restarted server" });
    expect(received.length).toBeGreaterThan(during);

    following.close();
    const opened = second.opened.length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(second.opened.length).toBeLessThanOrEqual(opened + 1);
    const settled = second.opened.length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(second.opened.length).toBe(settled);
  });

  it("ends a refused stream at once with the refusal's status and reason", async () => {
    const { server } = await serving(0, true);
    stops.push(() => server.shutdown(100));
    const client = new SessionEventsClient(server.address, insecureCredentials());
    stops.push(() => client.close());
    const error = await new Promise<{ code: number; metadata: Metadata }>((resolve) => {
      const stream = client.followEvents({});
      stream.on("data", () => resolve({ code: -1, metadata: new Metadata() }));
      stream.on("error", (e: { code: number; metadata: Metadata }) => resolve(e));
    });
    expect(error.code).toBe(status.PERMISSION_DENIED);
    expect(error.metadata.get("pg-reason")).toEqual(["role_required"]);
  });
});
