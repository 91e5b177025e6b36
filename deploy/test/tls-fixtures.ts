import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TlsFixture {
  readonly dir: string;
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** A second client certificate, whose SANs a principals file may name (CLIENT_CERTIFICATE_NAMES.peer). */
  readonly peerCert: string;
  readonly peerKey: string;
  readonly otherCaCert: string;
}

/**
 * The SANs of the fixture's client certificates, as a principals file's certificate_names lists
 * them: mTLS alone names a principal when one of these is listed.
 */
export const CLIENT_CERTIFICATE_NAMES = {
  client: "spiffe://prefix-guard.test/client",
  peer: "spiffe://prefix-guard.test/prompt-assembly",
  peerDns: "prompt-assembly.prefix-guard.test",
} as const;

/** A throwaway CA, a server certificate for 127.0.0.1 and two client certificates, made with openssl. */
export function makeTlsFixture(): TlsFixture {
  const dir = mkdtempSync(join(tmpdir(), "pg-tls-"));
  const p = (name: string) => join(dir, name);
  const ssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  ssl(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    p("ca.key"),
    "-out",
    p("ca.crt"),
    "-days",
    "2",
    "-subj",
    "/CN=prefix-guard test CA",
  );
  ssl(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    p("other-ca.key"),
    "-out",
    p("other-ca.crt"),
    "-days",
    "2",
    "-subj",
    "/CN=some other CA",
  );
  writeFileSync(p("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  writeFileSync(
    p("client.ext"),
    `subjectAltName=URI:${CLIENT_CERTIFICATE_NAMES.client}\nextendedKeyUsage=clientAuth\n`,
  );
  writeFileSync(
    p("peer.ext"),
    `subjectAltName=DNS:${CLIENT_CERTIFICATE_NAMES.peerDns},URI:${CLIENT_CERTIFICATE_NAMES.peer}\nextendedKeyUsage=clientAuth\n`,
  );
  for (const [name, ext] of [
    ["server", "server.ext"],
    ["client", "client.ext"],
    ["peer", "peer.ext"],
  ] as const) {
    ssl(
      "req",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      p(`${name}.key`),
      "-out",
      p(`${name}.csr`),
      "-subj",
      `/CN=${name}`,
    );
    ssl(
      "x509",
      "-req",
      "-in",
      p(`${name}.csr`),
      "-CA",
      p("ca.crt"),
      "-CAkey",
      p("ca.key"),
      "-CAcreateserial",
      "-out",
      p(`${name}.crt`),
      "-days",
      "2",
      "-extfile",
      p(ext),
    );
  }
  return {
    dir,
    caCert: p("ca.crt"),
    serverCert: p("server.crt"),
    serverKey: p("server.key"),
    clientCert: p("client.crt"),
    clientKey: p("client.key"),
    peerCert: p("peer.crt"),
    peerKey: p("peer.key"),
    otherCaCert: p("other-ca.crt"),
  };
}

/** A server's environment for mTLS with this fixture: its certificate and key, clients from the CA. */
export function serverTlsEnv(tls: TlsFixture): Record<string, string> {
  return {
    GRPC_TLS_CERT_FILE: tls.serverCert,
    GRPC_TLS_KEY_FILE: tls.serverKey,
    GRPC_TLS_CLIENT_CA_FILE: tls.caCert,
  };
}
