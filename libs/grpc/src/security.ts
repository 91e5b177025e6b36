import { readFileSync } from "node:fs";
import { ChannelCredentials, Metadata, ServerCredentials } from "@grpc/grpc-js";
import { ValidationError } from "@prefix-guard/errors";

export interface ServerTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** When set, clients must present a certificate signed by this CA (mTLS). */
  readonly clientCaFile?: string | undefined;
}

/** A PEM file's content; a ValidationError naming the setting (and the errno code) when unreadable. */
export function readPemFile(path: string, field: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ValidationError(field, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}

export function serverCredentials(tls: ServerTlsFiles | undefined): ServerCredentials {
  if (!tls) return ServerCredentials.createInsecure();
  const ca = tls.clientCaFile ? readPemFile(tls.clientCaFile, "GRPC_TLS_CLIENT_CA_FILE") : null;
  return ServerCredentials.createSsl(
    ca,
    [
      {
        cert_chain: readPemFile(tls.certFile, "GRPC_TLS_CERT_FILE"),
        private_key: readPemFile(tls.keyFile, "GRPC_TLS_KEY_FILE"),
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
  const cert = tls.certFile ? readPemFile(tls.certFile, "PEER_TLS_CERT_FILE") : null;
  const key = tls.keyFile ? readPemFile(tls.keyFile, "PEER_TLS_KEY_FILE") : null;
  return ChannelCredentials.createSsl(readPemFile(tls.caFile, "PEER_TLS_CA_FILE"), key, cert);
}

/** Call metadata carrying a bearer token, for clients. */
export function bearerMetadata(token: string | undefined): Metadata {
  const metadata = new Metadata();
  if (token) metadata.set("authorization", `Bearer ${token}`);
  return metadata;
}
