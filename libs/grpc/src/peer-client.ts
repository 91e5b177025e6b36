// The one way a service calls another: every call carries the peer's credentials, its bearer token
// and a deadline, and fails as a typed error naming the peer. Built because a hand-made client once
// forgot the token on one method (Resolve) while another (ReadEvents) sent it.
import type {
  CallOptions,
  ChannelCredentials,
  ChannelOptions,
  Client,
  ClientReadableStream,
  Metadata,
} from "@grpc/grpc-js";
import { callUnary, translatePeerError, type UnaryMethod } from "./client";

export interface PeerChannel {
  readonly credentials: ChannelCredentials;
  readonly metadata: Metadata;
}

export interface PeerCallOptions {
  readonly deadlineMs: number;
  /** Only idempotent calls are retried on UNAVAILABLE. */
  readonly idempotent?: boolean;
  readonly maxAttempts?: number;
}

export type ServerStreamMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options?: Partial<CallOptions>,
) => ClientReadableStream<Res>;

export interface FollowOptions<Res> {
  readonly onData: (message: Res) => void;
  /** Each time the stream ends or fails, before the next attempt (never for `close`). */
  readonly onDisconnect?: (error: unknown) => void;
  /** Waits between attempts: doubling from the first to the last, with jitter. Default 250 ms → 5 s. */
  readonly backoffMs?: readonly [number, number];
}

export interface Following {
  /** Ends the stream and stops reconnecting. */
  close(): void;
}

export interface PeerClient<C extends Client> {
  call<Req, Res>(method: (client: C) => UnaryMethod<Req, Res>, request: Req, options: PeerCallOptions): Promise<Res>;
  /**
   * Keeps a server stream open: reopened after it ends or fails, until closed. A long-lived stream
   * has no deadline; keepalive pings find a dead peer.
   */
  follow<Req, Res>(
    method: (client: C) => ServerStreamMethod<Req, Res>,
    request: Req,
    options: FollowOptions<Res>,
  ): Following;
  close(): void;
}

export function createPeerClient<C extends Client>(
  peer: string,
  open: (address: string, credentials: ChannelCredentials, options?: ChannelOptions) => C,
  address: string,
  channel: PeerChannel,
  channelOptions?: ChannelOptions,
): PeerClient<C> {
  const client = open(address, channel.credentials, channelOptions);
  return {
    async call(method, request, options) {
      try {
        return await callUnary(client, method(client), request, { ...options, metadata: channel.metadata });
      } catch (error) {
        throw translatePeerError(error, peer);
      }
    },
    follow(method, request, options) {
      const [firstMs, lastMs] = options.backoffMs ?? [250, 5_000];
      let closed = false;
      let waitMs = firstMs;
      let stream: ClientReadableStream<unknown> | undefined;
      let timer: NodeJS.Timeout | undefined;
      const open = () => {
        if (closed) return;
        const current = method(client).call(client, request, channel.metadata.clone()) as ClientReadableStream<unknown>;
        stream = current;
        let ended = false;
        const reopen = (error: unknown) => {
          if (ended) return;
          ended = true;
          if (closed) return;
          options.onDisconnect?.(translatePeerError(error, peer));
          const delay = waitMs * (0.5 + Math.random() / 2);
          waitMs = Math.min(waitMs * 2, lastMs);
          timer = setTimeout(open, delay);
          timer.unref();
        };
        current.on("data", (message) => {
          waitMs = firstMs;
          options.onData(message as never);
        });
        current.on("error", reopen);
        current.on("end", () => reopen(new Error("stream ended")));
      };
      open();
      return {
        close() {
          closed = true;
          if (timer !== undefined) clearTimeout(timer);
          stream?.cancel();
        },
      };
    },
    close: () => client.close(),
  };
}
