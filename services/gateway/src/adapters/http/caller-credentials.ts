// What an HTTP caller presented to the gateway: the token of its `x-prefix-guard-token` header and,
// under mTLS, its client certificate's names. A token is confidential when it came over TLS or from
// this machine's loopback; any other plaintext token is refused by the authenticator (as gRPC does).

import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import { certificateSanNames, isLoopbackAddress, type PresentedCredentials } from "@prefix-guard/grpc";
import { TOKEN_HEADER } from "../../application/caller-gate";

export interface ListenerTls {
  /** The gateway serves HTTPS. */
  readonly enabled: boolean;
  /** It asks for client certificates (GATEWAY_TLS_CLIENT_CA_FILE). */
  readonly clientCertificates: boolean;
}

const TOKEN_CARRIER = `${TOKEN_HEADER} header`;

export function presentedOverHttp(req: IncomingMessage, tls: ListenerTls): PresentedCredentials {
  const header = req.headers[TOKEN_HEADER];
  // node:http joins a repeated custom header with ", ": such a value matches no token.
  const bearerToken = Array.isArray(header) ? header.join(", ") : header;
  const certificate = tls.clientCertificates ? (req.socket as TLSSocket).getPeerCertificate() : undefined;
  return {
    bearerToken,
    tokenCarrier: TOKEN_CARRIER,
    certificateNames: certificateSanNames(certificate?.subjectaltname),
    confidential: tls.enabled || isLoopbackAddress(req.socket.remoteAddress ?? ""),
  };
}
