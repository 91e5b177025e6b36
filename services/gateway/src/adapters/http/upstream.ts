// One upstream (a provider's API origin): a keep-alive connection pool and the timeouts every call
// to it runs under, so no call can hang forever:
// - connect: DNS, TCP and TLS of a new connection (a pooled one is already connected);
// - headers: from the connection being ready to the response headers (long: reasoning models think
//   before they answer);
// - idle: the longest pause between two chunks of the response body.
// A timeout or a network error destroys the request and is reported once, as an UpstreamFailure
// naming the kind and what failed (an error code or the timeout), never a header or a body.

import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import { pipeline, type Readable } from "node:stream";
import type { MutableHeaders } from "../../domain/headers";
import type { UpstreamName } from "../../domain/routes";

export interface UpstreamTimeouts {
  readonly connectMs: number;
  readonly headersMs: number;
  readonly idleMs: number;
}

export type UpstreamFailureKind =
  | "connect_failed"
  | "connect_timeout"
  | "headers_timeout"
  | "idle_timeout"
  | "connection_lost";

export class UpstreamFailure extends Error {
  constructor(
    readonly kind: UpstreamFailureKind,
    /** What failed, safe to show: an error code ("ECONNREFUSED") or "no response headers". */
    readonly detail: string,
    /** The timeout that expired, for the *_timeout kinds. */
    readonly timeoutMs: number | null = null,
  ) {
    super(`${kind}: ${detail}`);
    this.name = "UpstreamFailure";
  }
}

export interface UpstreamRequest {
  readonly method: string;
  /** Path and query as the client sent them; the upstream URL's own path is put in front. */
  readonly target: string;
  readonly headers: MutableHeaders;
  /**
   * A body read whole, in pieces written one after the other (sent with its length), or a stream
   * piped through with backpressure.
   */
  readonly body: readonly Buffer[] | Readable;
}

export interface UpstreamHandlers {
  /** The response headers arrived; the body is the caller's to consume. */
  onResponse(response: IncomingMessage): void;
  /** Reported at most once, and never after abort(). `responseStarted`: onResponse had been called. */
  onFailure(failure: UpstreamFailure, responseStarted: boolean): void;
}

export interface UpstreamCall {
  /** Destroys the request and its response (the client went away); no failure is reported. */
  abort(): void;
}

const SETTINGS: Readonly<Record<"connect_timeout" | "headers_timeout" | "idle_timeout", string>> = {
  connect_timeout: "UPSTREAM_CONNECT_TIMEOUT_MS",
  headers_timeout: "UPSTREAM_HEADERS_TIMEOUT_MS",
  idle_timeout: "UPSTREAM_IDLE_TIMEOUT_MS",
};

/** The setting that bounds a timeout kind, to name it in an error. */
export function timeoutSetting(kind: "connect_timeout" | "headers_timeout" | "idle_timeout"): string {
  return SETTINGS[kind];
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : error instanceof Error ? error.name : "error";
}

export class Upstream {
  /** The upstream's origin, to name it in errors and logs (it never carries credentials). */
  readonly origin: string;
  private readonly agent: http.Agent;
  private readonly secure: boolean;
  private readonly basePath: string;

  constructor(
    readonly name: UpstreamName,
    private readonly url: URL,
    private readonly timeouts: UpstreamTimeouts,
    keepAliveMs: number,
  ) {
    this.origin = url.origin;
    this.secure = url.protocol === "https:";
    this.basePath = url.pathname.replace(/\/+$/, "");
    const options = { keepAlive: true, timeout: keepAliveMs, scheduling: "lifo" as const };
    this.agent = this.secure ? new https.Agent(options) : new http.Agent(options);
  }

  send(request: UpstreamRequest, handlers: UpstreamHandlers): UpstreamCall {
    const { timeouts } = this;
    const outgoing = (this.secure ? https : http).request({
      protocol: this.url.protocol,
      hostname: this.url.hostname.replace(/^\[|\]$/g, ""),
      port: this.url.port === "" ? undefined : Number(this.url.port),
      method: request.method,
      path: this.basePath + request.target,
      headers: request.headers,
      agent: this.agent,
    });
    let timer: NodeJS.Timeout | null = null;
    let settled = false;
    let connected = false;
    let response: IncomingMessage | null = null;

    const clear = () => {
      if (timer !== null) clearTimeout(timer);
      timer = null;
    };
    const fail = (failure: UpstreamFailure) => {
      if (settled) return;
      settled = true;
      clear();
      outgoing.destroy();
      response?.destroy();
      handlers.onFailure(failure, response !== null);
    };
    const arm = (kind: "connect_timeout" | "headers_timeout" | "idle_timeout", ms: number, detail: string) => {
      clear();
      timer = setTimeout(() => fail(new UpstreamFailure(kind, detail, ms)), ms);
    };

    outgoing.on("socket", (socket: Socket) => {
      const ready = () => {
        connected = true;
        if (response === null && !settled) arm("headers_timeout", timeouts.headersMs, "sent no response headers");
      };
      if (!socket.connecting) {
        ready();
        return;
      }
      arm("connect_timeout", timeouts.connectMs, "did not accept a connection");
      socket.once(this.secure ? "secureConnect" : "connect", ready);
    });
    outgoing.on("response", (incoming: IncomingMessage) => {
      if (settled) {
        incoming.destroy();
        return;
      }
      response = incoming;
      arm("idle_timeout", timeouts.idleMs, "sent no body bytes");
      handlers.onResponse(incoming);
      // After the caller attached its consumer, so this listener never starts the flow on its own.
      incoming.on("data", () => timer?.refresh());
      incoming.on("end", clear);
      incoming.on("close", () => {
        clear();
        if (!incoming.complete) fail(new UpstreamFailure("connection_lost", "closed the response before its end"));
      });
    });
    outgoing.on("error", (error: unknown) => {
      const kind = response !== null || connected ? "connection_lost" : "connect_failed";
      fail(new UpstreamFailure(kind, errorCode(error)));
    });

    if (Array.isArray(request.body)) {
      for (const piece of request.body) outgoing.write(piece);
      outgoing.end();
    } else
      pipeline(request.body as Readable, outgoing, (error) => {
        if (error) fail(new UpstreamFailure("connection_lost", `request body: ${errorCode(error)}`));
      });

    return {
      abort: () => {
        if (settled) return;
        settled = true;
        clear();
        outgoing.destroy();
        response?.destroy();
      },
    };
  }

  close(): void {
    this.agent.destroy();
  }
}
