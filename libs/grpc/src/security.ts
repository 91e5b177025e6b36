import { timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { ChannelCredentials, Metadata, ServerCredentials } from "@grpc/grpc-js";
import { UnauthenticatedError, ValidationError } from "@prefix-guard/errors";

export interface ServerTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** When set, clients must present a certificate signed by this CA (mTLS). */
  readonly clientCaFile?: string | undefined;
}

function readPem(path: string, field: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ValidationError(field, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}

export function serverCredentials(tls: ServerTlsFiles | undefined): ServerCredentials {
  if (!tls) return ServerCredentials.createInsecure();
  const ca = tls.clientCaFile ? readPem(tls.clientCaFile, "GRPC_TLS_CLIENT_CA_FILE") : null;
  return ServerCredentials.createSsl(
    ca,
    [
      {
        cert_chain: readPem(tls.certFile, "GRPC_TLS_CERT_FILE"),
        private_key: readPem(tls.keyFile, "GRPC_TLS_KEY_FILE"),
      },
    ],
    ca !== null,
  );
}

export interface ChannelTlsFiles {
  readonly caFile: string;
  readonly certFile?: string | undefined;
  readonly keyFile?: string | undefined;
}

export function channelCredentials(tls: ChannelTlsFiles | undefined): ChannelCredentials {
  if (!tls) return ChannelCredentials.createInsecure();
  const cert = tls.certFile ? readPem(tls.certFile, "PEER_TLS_CERT_FILE") : null;
  const key = tls.keyFile ? readPem(tls.keyFile, "PEER_TLS_KEY_FILE") : null;
  return ChannelCredentials.createSsl(readPem(tls.caFile, "PEER_TLS_CA_FILE"), key, cert);
}

/** Bearer tokens by caller name; an empty map means authentication is off. */
export type CallerTokens = ReadonlyMap<string, string>;

/** Parses "harness:s3cret,sre:t0ken" (caller:token pairs). */
export function parseCallerTokens(spec: string | undefined, field = "GRPC_AUTH_TOKENS"): CallerTokens {
  const tokens = new Map<string, string>();
  if (!spec) return tokens;
  for (const pair of spec.split(",")) {
    const trimmed = pair.trim();
    if (trimmed.length === 0) continue;
    const at = trimmed.indexOf(":");
    const caller = at > 0 ? trimmed.slice(0, at) : "";
    const token = at > 0 ? trimmed.slice(at + 1) : "";
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(caller))
      throw new ValidationError(field, "each entry must be caller:token with a caller name of [A-Za-z0-9_.-]");
    if (token.length < 16) throw new ValidationError(field, `token of caller ${caller} must be at least 16 characters`);
    tokens.set(caller, token);
  }
  return tokens;
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Returns the caller named by the call's `authorization: Bearer <token>`; throws UNAUTHENTICATED
 * otherwise. Every token is compared in constant time so a timing probe learns nothing.
 */
export function authenticateCaller(metadata: Metadata, tokens: CallerTokens): string | undefined {
  if (tokens.size === 0) return undefined;
  const header = metadata.get("authorization")[0];
  const presented =
    typeof header === "string" && header.startsWith("Bearer ") ? header.slice("Bearer ".length) : undefined;
  if (presented === undefined) throw new UnauthenticatedError("missing bearer token (authorization: Bearer <token>)");
  let caller: string | undefined;
  for (const [name, token] of tokens) if (sameSecret(presented, token)) caller = name;
  if (caller === undefined) throw new UnauthenticatedError("invalid bearer token");
  return caller;
}

/** Call metadata carrying a bearer token, for clients. */
export function bearerMetadata(token: string | undefined): Metadata {
  const metadata = new Metadata();
  if (token) metadata.set("authorization", `Bearer ${token}`);
  return metadata;
}
