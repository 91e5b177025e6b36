import { readFileSync } from "node:fs";
import type { ChannelCredentials, Metadata, ServerCredentials } from "@grpc/grpc-js";
import { LOCAL_PRINCIPAL } from "@prefix-guard/access";
import { ValidationError } from "@prefix-guard/errors";
import {
  type Authenticator,
  bearerMetadata,
  channelCredentials,
  localAuthenticator,
  PrincipalsFileAuthenticator,
  serverCredentials,
} from "@prefix-guard/grpc";
import type { Logger } from "@prefix-guard/logging";

export interface SecurityConfig {
  readonly GRPC_TLS_CERT_FILE?: string | undefined;
  readonly GRPC_TLS_KEY_FILE?: string | undefined;
  readonly GRPC_TLS_CLIENT_CA_FILE?: string | undefined;
  readonly GRPC_HOST?: string | undefined;
  readonly PRINCIPALS_FILE?: string | undefined;
  readonly PRINCIPALS_RELOAD_MS?: number | undefined;
  readonly INSECURE_ALLOW_UNAUTHENTICATED?: boolean | undefined;
  readonly PEER_TLS_CA_FILE?: string | undefined;
  readonly PEER_TLS_CERT_FILE?: string | undefined;
  readonly PEER_TLS_KEY_FILE?: string | undefined;
  readonly PEER_AUTH_TOKEN?: string | undefined;
  readonly PEER_AUTH_TOKEN_FILE?: string | undefined;
}

/** Whether a listen address only accepts connections from this machine. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined) return true;
  const bare = host.replace(/^\[|\]$/g, "");
  return bare === "localhost" || bare === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/**
 * Server side: TLS (mTLS with a client CA) and who may call. With a principals file every call is
 * authenticated against it. Without one, the server serves only the local principal, and only on
 * loopback: a non-loopback bind refuses to start unless INSECURE_ALLOW_UNAUTHENTICATED says this
 * is a development machine, and principals off loopback need TLS (a bearer token must never cross
 * a network in clear).
 */
export function grpcServerSecurity(
  config: SecurityConfig,
  logger: Logger,
): { credentials: ServerCredentials; authenticator: Authenticator; tls: boolean } {
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
  const loopback = isLoopbackHost(config.GRPC_HOST);
  const insecure = config.INSECURE_ALLOW_UNAUTHENTICATED === true;
  if (config.PRINCIPALS_FILE === undefined) {
    if (!loopback && !insecure) {
      throw new ValidationError(
        "PRINCIPALS_FILE",
        `GRPC_HOST=${config.GRPC_HOST} is not a loopback address: set PRINCIPALS_FILE (with GRPC_TLS_CERT_FILE and ` +
          "GRPC_TLS_KEY_FILE), or INSECURE_ALLOW_UNAUTHENTICATED=true on a development machine",
      );
    }
    if (!loopback)
      logger.warn({ host: config.GRPC_HOST }, "INSECURE_ALLOW_UNAUTHENTICATED: every caller has every role");
    return { credentials: serverCredentials(tls), authenticator: localAuthenticator(LOCAL_PRINCIPAL), tls: !!tls };
  }
  if (!loopback && tls === undefined && !insecure) {
    throw new ValidationError(
      "GRPC_TLS_CERT_FILE",
      `GRPC_HOST=${config.GRPC_HOST} is not a loopback address: bearer tokens need TLS (GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE)`,
    );
  }
  return {
    credentials: serverCredentials(tls),
    authenticator: new PrincipalsFileAuthenticator(config.PRINCIPALS_FILE, logger, config.PRINCIPALS_RELOAD_MS),
    tls: tls !== undefined,
  };
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
  if (config.PEER_AUTH_TOKEN !== undefined && config.PEER_AUTH_TOKEN_FILE !== undefined)
    throw new ValidationError("PEER_AUTH_TOKEN_FILE", "set PEER_AUTH_TOKEN or PEER_AUTH_TOKEN_FILE, not both");
  return { credentials: channelCredentials(tls), metadata: bearerMetadata(peerToken(config)) };
}

function peerToken(config: SecurityConfig): string | undefined {
  if (config.PEER_AUTH_TOKEN_FILE === undefined) return config.PEER_AUTH_TOKEN;
  try {
    return readFileSync(config.PEER_AUTH_TOKEN_FILE, "utf8").trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
    throw new ValidationError("PEER_AUTH_TOKEN_FILE", `cannot read the token file (${code})`);
  }
}
