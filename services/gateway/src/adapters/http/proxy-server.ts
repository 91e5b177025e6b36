// The gateway's HTTP server: node:http in, node:http(s) out, no framework on the path.
//
// Observed routes (routes.ts): the client's body is read whole, bounded by GATEWAY_MAX_BODY_BYTES
// (that is what lets it be fingerprinted; 85 KiB costs nothing to hold), then sent upstream with
// the client's headers less this hop's own. The response's status, headers and body go back chunk
// by chunk through relayStreams (backpressure both ways, an event stream is never held whole),
// and a tee feeds the usage reader. Observation starts only once the exchange has ended.
// Every other /v1/ request is piped through both ways untouched and unobserved.
//
// Callers: every /v1/ request passes the caller gate first (application/caller-gate.ts): a refused
// one is answered 401/403/429 in its provider's error shape before its body is read.
//
// Failures: a client that goes away destroys the upstream request at once; an upstream that cannot
// be reached or times out before answering gets the client a 502/504 in its provider's error
// shape; one that fails mid-body has the client's response destroyed too (its status is sent).

import http, { type IncomingMessage, type Server, type ServerResponse } from "node:http";
import https from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { performance } from "node:perf_hooks";
import type { Transform } from "node:stream";
import type { Principal } from "@prefix-guard/access";
import type { Logger } from "@prefix-guard/logging";
import type { HttpsServerFiles } from "@prefix-guard/runtime";
import type { CallerGate } from "../../application/caller-gate";
import type { ExchangeFacts, ResponseUsage } from "../../application/observe-exchange";
import type { Stabilizer } from "../../application/stabilizer";
import { errorResponse, type GatewayError, gatewayErrors } from "../../domain/errors";
import {
  bodyFormatOf,
  clientResponseHeaders,
  contentEncodingOf,
  type MutableHeaders,
  upstreamRequestHeaders,
} from "../../domain/headers";
import { type ErrorShape, type ObservedRoute, routeRequest, type UpstreamName } from "../../domain/routes";
import { checkSessionHeader, SESSION_HEADER } from "../../domain/session-identity";
import { withStabilizedHeader } from "../../domain/stabilize/rules";
import { planChatStreamUsage } from "../../domain/stream-options";
import { type UsageReaderLimits, UsageStreamReader } from "../../domain/usage-stream";
import type { GatewayMetrics, RequestRoute } from "../metrics/gateway-metrics";
import { type ListenerTls, presentedOverHttp } from "./caller-credentials";
import { ChunkFilterFailed, relayFiltered, relayStreams } from "./relay";
import { timeoutSetting, type Upstream, type UpstreamFailure } from "./upstream";
import { decoderFor, InjectedUsageFilter, InjectedUsageHider } from "./usage-filter";

export interface ProxyDeps {
  readonly upstreams: Readonly<Record<UpstreamName, Upstream>>;
  readonly maxBodyBytes: number;
  readonly usageLimits: UsageReaderLimits;
  /**
   * Called once per ended exchange on an observed route; must return at once (it schedules). It
   * takes the request's bytes: the exchange has ended and nothing here reads them again, so the
   * observation thread is handed them instead of a copy.
   */
  readonly observe: (facts: ExchangeFacts) => void;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  readonly now: () => number;
  /** Who may call (PRINCIPALS_FILE, or the local principal on loopback). */
  readonly gate: CallerGate;
  /** How the listener serves: a token is confidential over TLS or from loopback. */
  readonly tls: ListenerTls;
  /** Set in stabilize mode (GATEWAY_MODE=stabilize): rewrites each observed request before it is sent. */
  readonly stabilizer?: Stabilizer;
}

type BodyRead = Buffer | "too_large" | "aborted";

/** The client's body, whole, or why not. Stops reading (and holding) at the limit. */
function readBody(req: IncomingMessage, limit: number): Promise<BodyRead> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve("too_large");
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const settle = (result: BodyRead) => {
      if (done) return;
      done = true;
      req.off("data", onData);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        req.pause();
        settle("too_large");
        return;
      }
      chunks.push(chunk);
    };
    // Joined once, by whichever event settles first: "close" follows "end" on every request, and
    // joining its chunks again there copied every body twice.
    const whole = (): Buffer => (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    req.on("data", onData);
    req.on("end", () => {
      if (!done) settle(whole());
    });
    req.on("error", () => settle("aborted"));
    req.on("close", () => {
      if (!done) settle(req.complete ? whole() : "aborted");
    });
  });
}

function sendError(res: ServerResponse, shape: ErrorShape, error: GatewayError, close = false): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  const response = errorResponse(shape, error);
  const headers: MutableHeaders = {
    "content-type": response.contentType,
    "content-length": Buffer.byteLength(response.body),
  };
  if (close) headers.connection = "close";
  for (const [name, value] of Object.entries(response.headers)) headers[name] = value;
  res.writeHead(response.status, headers);
  res.end(response.body);
}

function failureError(upstream: Upstream, failure: UpstreamFailure): GatewayError {
  const kind = failure.kind;
  if (kind === "connect_timeout" || kind === "headers_timeout" || kind === "idle_timeout")
    return gatewayErrors.upstreamTimeout(upstream.origin, timeoutSetting(kind), failure.timeoutMs ?? 0, failure.detail);
  return gatewayErrors.upstreamUnreachable(upstream.origin, failure.detail);
}

const HEALTH_BODY = JSON.stringify({ status: "ok" });
const READY_BODY = JSON.stringify({ status: "ready" });
const DRAINING_BODY = JSON.stringify({ status: "draining" });

/** The body as JSON, or undefined when it is not JSON (the upstream will say so). */
function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}

/** The client's connection is gone (its socket closed), whatever event reported it first. */
function clientGone(req: IncomingMessage, res: ServerResponse): boolean {
  return res.destroyed || req.socket.destroyed;
}

export class ProxyHandler {
  /** Shutting down: /readyz answers 503 so a load balancer stops sending before the port closes. */
  private draining = false;

  constructor(private readonly deps: ProxyDeps) {}

  drain(): void {
    this.draining = true;
  }

  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const routed = routeRequest(req.method ?? "GET", req.url ?? "/", req.headers["anthropic-version"] !== undefined);
    const label: RequestRoute =
      routed.kind === "observed" ? routed.route.name : routed.kind === "pass_through" ? "pass_through" : "local";
    res.once("close", () => this.deps.metrics.response(label, res.headersSent ? res.statusCode : null));
    switch (routed.kind) {
      case "observed": {
        const principal = this.admitted(req, res, label, routed.route.upstream);
        if (principal === null) return;
        void this.observed(req, res, routed.route, routed.target, principal).catch((error: unknown) =>
          this.crashed(res, routed.route.upstream, error),
        );
        return;
      }
      case "pass_through":
        if (this.admitted(req, res, label, routed.upstream) === null) return;
        this.passThrough(req, res, routed.upstream, routed.target);
        return;
      case "health":
        this.answerLocally(req, res, 200, HEALTH_BODY);
        return;
      case "ready":
        this.answerLocally(req, res, this.draining ? 503 : 200, this.draining ? DRAINING_BODY : READY_BODY);
        return;
      case "not_found":
        req.resume();
        sendError(res, routed.errorShape, gatewayErrors.notFound());
        this.deps.metrics.request("local", "rejected");
        return;
    }
  };

  /** Health and readiness: answered here, without reading anything or asking an upstream. */
  private answerLocally(req: IncomingMessage, res: ServerResponse, status: number, body: string): void {
    res.writeHead(status, { "content-type": "application/json", "content-length": body.length });
    res.end(req.method === "HEAD" ? undefined : body);
    this.deps.metrics.request("local", "completed");
  }

  /** The caller's principal, or null once a refusal was sent (nothing read, nothing forwarded). */
  private admitted(
    req: IncomingMessage,
    res: ServerResponse,
    route: RequestRoute,
    shape: ErrorShape,
  ): Principal | null {
    const admission = this.deps.gate.admit(presentedOverHttp(req, this.deps.tls));
    if (admission.kind === "admitted") return admission.principal;
    req.resume();
    sendError(res, shape, admission.error);
    this.deps.metrics.request(route, admission.outcome);
    // The outcome and the principal's rule only: never the token or any other header.
    this.deps.logger.debug({ route, outcome: admission.outcome }, "caller refused");
    return null;
  }

  /** A bug, not a failure of either side: logged by its class only (a message could quote content). */
  private crashed(res: ServerResponse, shape: ErrorShape, error: unknown): void {
    this.deps.logger.error({ err: error instanceof Error ? error.name : typeof error }, "gateway handler failed");
    sendError(res, shape, gatewayErrors.internal(), true);
  }

  private async observed(
    req: IncomingMessage,
    res: ServerResponse,
    route: ObservedRoute,
    target: string,
    principal: Principal,
  ): Promise<void> {
    const { deps } = this;
    const startedAtMs = deps.now();
    const started = performance.now();
    const session = checkSessionHeader(req.headers[SESSION_HEADER]);
    if (session.kind === "invalid") {
      req.resume();
      sendError(res, route.upstream, gatewayErrors.invalidSessionHeader(SESSION_HEADER, session.reason));
      deps.metrics.request(route.name, "rejected");
      return;
    }
    const body = await readBody(req, deps.maxBodyBytes);
    if (body === "aborted") {
      deps.metrics.request(route.name, "client_aborted");
      return;
    }
    if (body === "too_large") {
      // The rest of the body is not read: the connection closes after the answer.
      sendError(res, route.upstream, gatewayErrors.requestTooLarge(deps.maxBodyBytes), true);
      res.on("finish", () => req.destroy());
      deps.metrics.request(route.name, "rejected");
      return;
    }
    const read = performance.now();
    // Stabilize mode rewrites the request first; forwarding and the observation see what is sent.
    const stabilized =
      deps.stabilizer?.stabilize(route.name, session.kind === "valid" ? session.id : null, body, parseJson(body)) ??
      null;
    const sent = stabilized?.bytes ?? body;
    // Observe mode parses nothing before forwarding: Chat Completions' include_usage is decided on
    // the bytes, and the observation cuts the bytes sent after the exchange.
    const plan =
      route.name === "openai_chat" ? planChatStreamUsage(sent) : { body: [sent], injected: false, stream: false };
    const forwardedBytes = plan.body.reduce((sum, piece) => sum + piece.length, 0);
    const upstream = deps.upstreams[route.upstream];

    let finished = false;
    let responseStatus: number | null = null;
    let headersAt: number | null = null;
    let reader: UsageStreamReader | null = null;
    let usage: ResponseUsage = { kind: "none" };
    /** Resolves once a decoder outside the relayed streams has fed the reader everything. */
    let readerDrained: Promise<void> = Promise.resolve();
    /** Decoding or filtering the body for the client failed (not the client leaving). */
    let stageFailed = false;
    /** The response streams are relayed: it decides how the exchange ended. */
    let piping = false;

    const finish = (outcome: ExchangeFacts["outcome"]) => {
      if (finished) return;
      finished = true;
      deps.metrics.request(route.name, outcome);
      const ended = performance.now();
      // Facts only: never a header, a body or the session key.
      deps.logger.debug(
        { route: route.name, status: responseStatus, outcome, ms: Math.round((ended - started) * 100) / 100 },
        "exchange ended",
      );
      void readerDrained.then(() => {
        let responseUsage = usage;
        if (reader !== null && outcome === "completed") {
          try {
            responseUsage = { kind: "read", reading: reader.finish() };
          } catch {
            responseUsage = { kind: "not_read", reason: "usage_unreadable" };
          }
        }
        const facts: ExchangeFacts = {
          route,
          principal,
          sessionHeader: session.kind === "valid" ? session.id : null,
          requestBytes: sent,
          usageInjected: plan.injected,
          responseStatus,
          outcome,
          usage: responseUsage,
          timings: {
            startedAtMs,
            requestReadMs: read - started,
            upstreamHeadersMs: headersAt === null ? null : headersAt - read,
            totalMs: ended - started,
          },
        };
        deps.observe(facts);
      });
    };
    const feed = (chunk: Buffer) => {
      if (reader === null) return;
      try {
        reader.push(chunk);
      } catch {
        reader = null;
        usage = { kind: "not_read", reason: "usage_unreadable" };
      }
    };

    deps.metrics.added(route.name, performance.now() - read);
    const call = upstream.send(
      { method: "POST", target, headers: upstreamRequestHeaders(req.headers, forwardedBytes), body: plan.body },
      {
        onResponse: (incoming) => {
          headersAt = performance.now();
          const status = incoming.statusCode ?? 502;
          responseStatus = status;
          const success = status >= 200 && status < 300;
          const format = bodyFormatOf(incoming.headers);
          const encoding = contentEncodingOf(incoming.headers);
          const decoder = success && format !== null && encoding !== "identity" ? decoderFor(encoding) : null;
          if (success) {
            if (format === null) usage = { kind: "not_read", reason: "unsupported_content_type" };
            else if (encoding !== "identity" && decoder === null)
              usage = { kind: "not_read", reason: "unsupported_content_encoding" };
            else reader = new UsageStreamReader(route.usageProvider, format, deps.usageLimits);
          }
          // The client did not ask for the stream's usage: hide what asking for it added.
          const hide = plan.injected && success && format === "sse" && (encoding === "identity" || decoder !== null);
          const stages: Transform[] = [];
          // An identity-encoded stream is filtered in the relay's data handler (relayFiltered); a
          // decoded one goes through the decoder and the filter as stream stages.
          const filter = hide && decoder === null ? new InjectedUsageHider(deps.usageLimits.maxEventBytes) : null;
          if (hide && decoder !== null) {
            stages.push(decoder, new InjectedUsageFilter(deps.usageLimits.maxEventBytes));
            // A stage destroyed because the client left reports a premature close.
            for (const stage of stages)
              stage.once("error", (error: { code?: unknown }) => {
                if (error.code !== "ERR_STREAM_PREMATURE_CLOSE") stageFailed = true;
              });
          }
          res.writeHead(
            status,
            withStabilizedHeader(
              clientResponseHeaders(incoming.headers, {
                dropContentLength: hide,
                dropContentEncoding: hide && decoder !== null,
              }),
              stabilized?.header ?? null,
            ),
          );
          // An error is told after every stream closed (relay.ts), so an upstream failure has already
          // finished the exchange (onFailure); an error left here is the client leaving or a stage failing.
          piping = true;
          const relayed = (error: Error | null) => {
            if (!error) finish("completed");
            else if (!finished) {
              call.abort();
              finish(stageFailed || error instanceof ChunkFilterFailed ? "upstream_failed" : "client_aborted");
            }
          };
          if (filter !== null) relayFiltered(incoming, filter, res, relayed);
          else relayStreams([incoming, ...stages, res], relayed);
          if (reader === null) return;
          if (decoder === null) incoming.on("data", feed);
          else if (hide) decoder.on("data", feed);
          else
            readerDrained = this.teeDecoded(incoming, decoder, feed, () => {
              reader = null;
              usage = { kind: "not_read", reason: "decoding_failed" };
            });
        },
        onFailure: (failure, responseStarted) => {
          if (clientGone(req, res)) {
            finish("client_aborted");
            return;
          }
          deps.metrics.upstreamFailure(route.upstream, failure.kind);
          deps.logger.warn(
            { route: route.name, upstream: upstream.origin, kind: failure.kind, detail: failure.detail },
            "upstream call failed",
          );
          finish("upstream_failed");
          if (responseStarted) res.destroy();
          else sendError(res, route.upstream, failureError(upstream, failure));
        },
      },
    );
    res.on("close", () => {
      if (res.writableFinished || finished || piping) return;
      call.abort();
      finish("client_aborted");
    });
  }

  /** Decodes a copy of the body for the reader only; the client gets the bytes as they came. */
  private teeDecoded(
    incoming: IncomingMessage,
    decoder: Transform,
    feed: (chunk: Buffer) => void,
    failed: () => void,
  ): Promise<void> {
    incoming.on("data", (chunk: Buffer) => decoder.write(chunk));
    incoming.on("end", () => decoder.end());
    incoming.on("close", () => {
      if (!incoming.complete) decoder.destroy();
    });
    decoder.on("data", feed);
    return new Promise((resolve) => {
      decoder.on("end", resolve);
      decoder.on("close", resolve);
      decoder.on("error", () => {
        failed();
        resolve();
      });
    });
  }

  private passThrough(req: IncomingMessage, res: ServerResponse, name: UpstreamName, target: string): void {
    const { deps } = this;
    const upstream = deps.upstreams[name];
    const route: RequestRoute = "pass_through";
    let finished = false;
    const finish = (outcome: "completed" | "client_aborted" | "upstream_failed") => {
      if (finished) return;
      finished = true;
      deps.metrics.request(route, outcome);
    };
    const call = upstream.send(
      { method: req.method ?? "GET", target, headers: upstreamRequestHeaders(req.headers), body: req },
      {
        onResponse: (incoming) => {
          res.writeHead(incoming.statusCode ?? 502, clientResponseHeaders(incoming.headers));
          relayStreams([incoming, res], (error) => {
            if (!error) finish("completed");
          });
        },
        onFailure: (failure, responseStarted) => {
          if (clientGone(req, res)) {
            finish("client_aborted");
            return;
          }
          deps.metrics.upstreamFailure(name, failure.kind);
          deps.logger.warn(
            { route, upstream: upstream.origin, kind: failure.kind, detail: failure.detail },
            "upstream call failed",
          );
          finish("upstream_failed");
          if (responseStarted) res.destroy();
          else sendError(res, name, failureError(upstream, failure), true);
        },
      },
    );
    res.on("close", () => {
      if (res.writableFinished || finished) return;
      call.abort();
      finish("client_aborted");
    });
  }
}

export interface ProxyServer {
  /** host:port as bound (the port is the real one when 0 was asked for). */
  readonly address: string;
  readonly port: number;
  /** Stops accepting; in-flight exchanges get `graceMs` to end, then their connections are closed. */
  close(graceMs: number): Promise<void>;
}

/**
 * Plain HTTP, or HTTPS with `tls` (and client certificates required when it has a CA). A refused
 * client certificate ends the handshake: no request is read.
 */
export async function startProxyServer(
  host: string,
  port: number,
  handler: ProxyHandler,
  tls?: HttpsServerFiles,
): Promise<ProxyServer> {
  /** Requests in flight on each open client connection. */
  const connections = new Map<Socket, number>();
  let closing = false;
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    connections.set(socket, (connections.get(socket) ?? 0) + 1);
    res.on("close", () => {
      const left = (connections.get(socket) ?? 1) - 1;
      connections.set(socket, left);
      // Shutting down: a connection is closed as soon as its last exchange ended.
      if (closing && left === 0) socket.destroy();
    });
    handler.handle(req, res);
  };
  const server: Server =
    tls === undefined
      ? http.createServer({ keepAliveTimeout: 65_000 }, onRequest)
      : https.createServer(
          {
            keepAliveTimeout: 65_000,
            cert: tls.cert,
            key: tls.key,
            ...(tls.ca === undefined ? {} : { ca: tls.ca, requestCert: true, rejectUnauthorized: true }),
          },
          onRequest,
        );
  // Over TLS a request's socket is the TLS socket, which the server reports once the handshake is done.
  server.on(tls === undefined ? "connection" : "secureConnection", (socket: Socket) => {
    connections.set(socket, 0);
    socket.on("close", () => connections.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const shownHost = bound.family === "IPv6" ? `[${bound.address}]` : bound.address;
  return {
    address: `${shownHost}:${bound.port}`,
    port: bound.port,
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        closing = true;
        handler.drain();
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        // Idle keep-alive connections (and ones a client opened but never used) close now.
        for (const [socket, inFlight] of connections) if (inFlight === 0) socket.destroy();
      }),
  };
}
