import type { ChannelCredentials, Metadata, ServerCredentials } from "@grpc/grpc-js";
import { ValidationError } from "@prefix-guard/errors";
import {
  bearerMetadata,
  type CallerTokens,
  channelCredentials,
  parseCallerTokens,
  serverCredentials,
} from "@prefix-guard/grpc";

export interface SecurityConfig {
  readonly GRPC_TLS_CERT_FILE?: string | undefined;
  readonly GRPC_TLS_KEY_FILE?: string | undefined;
  readonly GRPC_TLS_CLIENT_CA_FILE?: string | undefined;
  readonly GRPC_AUTH_TOKENS?: string | undefined;
  readonly PEER_TLS_CA_FILE?: string | undefined;
  readonly PEER_TLS_CERT_FILE?: string | undefined;
  readonly PEER_TLS_KEY_FILE?: string | undefined;
  readonly PEER_AUTH_TOKEN?: string | undefined;
}

/** Server side: TLS (mTLS with a client CA) and bearer tokens, both off by default for loopback. */
export function grpcServerSecurity(config: SecurityConfig): {
  credentials: ServerCredentials;
  callerTokens: CallerTokens;
} {
  if ((config.GRPC_TLS_CERT_FILE === undefined) !== (config.GRPC_TLS_KEY_FILE === undefined)) {
    throw new ValidationError(
      config.GRPC_TLS_CERT_FILE ? "GRPC_TLS_KEY_FILE" : "GRPC_TLS_CERT_FILE",
      "TLS needs both GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE",
    );
  }
  if (config.GRPC_TLS_CLIENT_CA_FILE && !config.GRPC_TLS_CERT_FILE)
    throw new ValidationError("GRPC_TLS_CLIENT_CA_FILE", "mTLS needs GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE too");
  const tls =
    config.GRPC_TLS_CERT_FILE && config.GRPC_TLS_KEY_FILE
      ? {
          certFile: config.GRPC_TLS_CERT_FILE,
          keyFile: config.GRPC_TLS_KEY_FILE,
          clientCaFile: config.GRPC_TLS_CLIENT_CA_FILE,
        }
      : undefined;
  return { credentials: serverCredentials(tls), callerTokens: parseCallerTokens(config.GRPC_AUTH_TOKENS) };
}

/** Client side, for calls to peer services. */
export function grpcPeerSecurity(config: SecurityConfig): { credentials: ChannelCredentials; metadata: Metadata } {
  if ((config.PEER_TLS_CERT_FILE === undefined) !== (config.PEER_TLS_KEY_FILE === undefined)) {
    throw new ValidationError(
      "PEER_TLS_CERT_FILE",
      "a client certificate needs both PEER_TLS_CERT_FILE and PEER_TLS_KEY_FILE",
    );
  }
  const tls = config.PEER_TLS_CA_FILE
    ? { caFile: config.PEER_TLS_CA_FILE, certFile: config.PEER_TLS_CERT_FILE, keyFile: config.PEER_TLS_KEY_FILE }
    : undefined;
  return { credentials: channelCredentials(tls), metadata: bearerMetadata(config.PEER_AUTH_TOKEN) };
}
