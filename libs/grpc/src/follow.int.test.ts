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
import {
  createPeerClient,
  followEveryAddress,
  insecureCredentials,
  type RunningGrpcServer,
  startGrpcServer,
} from "./index";
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
async function serving(
  port: number,
  refuse = false,
  host = "127.0.0.1",
): Promise<{ server: RunningGrpcServer; opened: number[] }> {
  const opened: number[] = [];
  const server = await startGrpcServer({
    authenticator: localTestAuthenticator(),
    host,
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
            call.write({ events: [{ sessionId: `${host}/stream-${opened.length}`, seq: 1, event: Buffer.from([1]) }] });
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
    expect(received.slice(0, 3)).toEqual(["127.0.0.1/stream-1", "127.0.0.1/stream-2", "127.0.0.1/stream-3"]);
    expect(disconnects.length).toBeGreaterThanOrEqual(2);

    await first.server.shutdown(100);
    const during = received.length;
    const second = await serving(port);
    stops.push(() => second.server.shutdown(100));
    // The server counts a stream as opened when its handler writes; the batch reaches the client a
    // moment later, so the wait is on what the client received.
    await eventually(() => received.length > during, { what: "a batch from the restarted server" });
    expect(second.opened.length).toBeGreaterThanOrEqual(1);

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

  it("follows every address a name resolves to, one stream each, and lets go of an address that is gone", async () => {
    const one = await serving(0, false, "127.0.0.1");
    stops.push(() => one.server.shutdown(100));
    const two = await serving(one.server.port, false, "127.0.0.2");
    stops.push(() => two.server.shutdown(100));
    let addresses = ["127.0.0.1", "127.0.0.2"];
    const hosts: string[] = [];
    const received = new Set<string>();
    const following = followEveryAddress({
      address: `session-events.test:${one.server.port}`,
      resolve: async (host) => {
        hosts.push(host);
        return addresses;
      },
      resolveEveryMs: 50,
      follow: (target, host) => {
        expect(host).toBe("session-events.test");
        const peer = createPeerClient(
          "session-events",
          (address, credentials, options) => new SessionEventsClient(address, credentials, options),
          target,
          { credentials: insecureCredentials(), metadata: new Metadata() },
          { "grpc.default_authority": host },
        );
        const stream = peer.follow(
          (client) => client.followEvents,
          {},
          {
            onData: (batch: FollowedEvents) => {
              for (const event of batch.events) received.add(event.sessionId.split("/")[0] ?? "");
            },
            backoffMs: [10, 50],
          },
        );
        return {
          close() {
            stream.close();
            peer.close();
          },
        };
      },
    });
    stops.push(() => following.close());
    await eventually(() => received.has("127.0.0.1") && received.has("127.0.0.2"), { what: "both replicas" });
    expect(following.targets()).toEqual([`127.0.0.1:${one.server.port}`, `127.0.0.2:${one.server.port}`]);
    expect(hosts[0]).toBe("session-events.test");

    // The second replica leaves the name: its stream is closed and not reopened.
    addresses = ["127.0.0.1"];
    await eventually(() => following.targets().length === 1, { what: "the gone address let go" });
    const settled = two.opened.length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(two.opened.length).toBeLessThanOrEqual(settled + 1);
    expect(one.opened.length).toBeGreaterThan(0);

    // A lookup that finds nothing keeps what is open.
    addresses = [];
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(following.targets()).toEqual([`127.0.0.1:${one.server.port}`]);
  });
});
