// The one way a service calls another: every call carries the peer's credentials, its bearer token
// and a deadline, and fails as a typed error naming the peer. Built because a hand-made client once
// forgot the token on one method (Resolve) while another (ReadEvents) sent it.
import type { ChannelCredentials, Client, Metadata } from "@grpc/grpc-js";
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

export interface PeerClient<C extends Client> {
  call<Req, Res>(method: (client: C) => UnaryMethod<Req, Res>, request: Req, options: PeerCallOptions): Promise<Res>;
  close(): void;
}

export function createPeerClient<C extends Client>(
  peer: string,
  open: (address: string, credentials: ChannelCredentials) => C,
  address: string,
  channel: PeerChannel,
): PeerClient<C> {
  const client = open(address, channel.credentials);
  return {
    async call(method, request, options) {
      try {
        return await callUnary(client, method(client), request, { ...options, metadata: channel.metadata });
      } catch (error) {
        throw translatePeerError(error, peer);
      }
    },
    close: () => client.close(),
  };
}
