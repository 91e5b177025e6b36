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
  readPemFile,
  type ServerTlsFiles,
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

/** A setting by the name an operator sets it under, and its value. */
export interface NamedSetting {
  readonly name: string;
  readonly value: string | undefined;
}

/** Where a server listens and the TLS files it serves with, under the names of its own settings. */
export interface ListenerSettings {
  readonly host: NamedSetting;
  readonly certFile: NamedSetting;
  readonly keyFile: NamedSetting;
  /** Set: clients must present a certificate signed by this CA (mTLS). */
  readonly clientCaFile: NamedSetting;
}

export interface ServerSecurity {
  readonly authenticator: Authenticator;
  /** The TLS files to serve with; undefined = plaintext. */
  readonly tls: ServerTlsFiles | undefined;
}

/**
 * Server side, for any transport: TLS (mTLS with a client CA) and who may call. With a principals
 * file every call is authenticated against it. Without one, the server serves only the local
 * principal, and only on loopback: a non-loopback bind refuses to start unless
 * INSECURE_ALLOW_UNAUTHENTICATED says this is a development machine, and principals off loopback
 * need TLS (a bearer token must never cross a network in clear).
 */
export function serverSecurity(listener: ListenerSettings, config: SecurityConfig, logger: Logger): ServerSecurity {
  const { host, certFile, keyFile, clientCaFile } = listener;
  if ((certFile.value === undefined) !== (keyFile.value === undefined)) {
    throw new ValidationError(
      certFile.value ? keyFile.name : certFile.name,
      `TLS needs both ${certFile.name} and ${keyFile.name}`,
    );
  }
  if (clientCaFile.value && !certFile.value)
    throw new ValidationError(clientCaFile.name, `mTLS needs ${certFile.name} and ${keyFile.name} too`);
  const tls =
    certFile.value && keyFile.value
      ? { certFile: certFile.value, keyFile: keyFile.value, clientCaFile: clientCaFile.value }
      : undefined;
  const loopback = isLoopbackHost(host.value);
  const insecure = config.INSECURE_ALLOW_UNAUTHENTICATED === true;
  if (config.PRINCIPALS_FILE === undefined) {
    if (!loopback && !insecure) {
      throw new ValidationError(
        "PRINCIPALS_FILE",
        `${host.name}=${host.value} is not a loopback address: set PRINCIPALS_FILE (with ${certFile.name} and ` +
          `${keyFile.name}), or INSECURE_ALLOW_UNAUTHENTICATED=true on a development machine`,
      );
    }
    if (!loopback) logger.warn({ host: host.value }, "INSECURE_ALLOW_UNAUTHENTICATED: every caller has every role");
    return { authenticator: localAuthenticator(LOCAL_PRINCIPAL), tls };
  }
  if (!loopback && tls === undefined && !insecure) {
    throw new ValidationError(
      certFile.name,
      `${host.name}=${host.value} is not a loopback address: bearer tokens need TLS (${certFile.name} and ${keyFile.name})`,
    );
  }
  return {
    authenticator: new PrincipalsFileAuthenticator(config.PRINCIPALS_FILE, logger, config.PRINCIPALS_RELOAD_MS),
    tls,
  };
}

/** The gRPC servers: serverSecurity under the GRPC_* settings, as gRPC credentials. */
export function grpcServerSecurity(
  config: SecurityConfig,
  logger: Logger,
): { credentials: ServerCredentials; authenticator: Authenticator; tls: boolean } {
  const { authenticator, tls } = serverSecurity(
    {
      host: { name: "GRPC_HOST", value: config.GRPC_HOST },
      certFile: { name: "GRPC_TLS_CERT_FILE", value: config.GRPC_TLS_CERT_FILE },
      keyFile: { name: "GRPC_TLS_KEY_FILE", value: config.GRPC_TLS_KEY_FILE },
      clientCaFile: { name: "GRPC_TLS_CLIENT_CA_FILE", value: config.GRPC_TLS_CLIENT_CA_FILE },
    },
    config,
    logger,
  );
  return { credentials: serverCredentials(tls), authenticator, tls: tls !== undefined };
}

/** What node:https needs to serve a ServerSecurity's TLS files (PEM contents, read once at start). */
export interface HttpsServerFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** With a client CA: clients must present a certificate it signed (requestCert, rejectUnauthorized). */
  readonly ca?: Buffer;
}

/** Reads the TLS files of an HTTP listener; errors name the setting, never the file's content. */
export function httpsServerFiles(tls: ServerTlsFiles, listener: ListenerSettings): HttpsServerFiles {
  return {
    cert: readPemFile(tls.certFile, listener.certFile.name),
    key: readPemFile(tls.keyFile, listener.keyFile.name),
    ...(tls.clientCaFile ? { ca: readPemFile(tls.clientCaFile, listener.clientCaFile.name) } : {}),
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
