// Start-up refusals: a server that would be open to a network without authentication, or that would
// take bearer tokens over plaintext, does not start, and says which settings to set.

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "@prefix-guard/config";
import { ValidationError } from "@prefix-guard/errors";
import { silentLogger } from "@prefix-guard/logging";
import { describe, expect, it } from "vitest";
import { commonConfigShape } from "./common-config";
import { grpcServerSecurity, isLoopbackHost, type ListenerSettings, serverSecurity } from "./security";

const dir = mkdtempSync(join(tmpdir(), "pg-security-"));
const principalsFile = join(dir, "principals.json");
writeFileSync(
  principalsFile,
  JSON.stringify({ principals: [{ name: "ops", roles: ["operator"], token_sha256: ["a".repeat(64)] }] }),
);

function refusal(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("expected start-up to be refused");
}

describe("server security at start", () => {
  it("knows loopback addresses", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]) expect(isLoopbackHost(host)).toBe(true);
    for (const host of ["0.0.0.0", "::", "10.0.0.1", "127.0.0.1.nip.io", "localhost.evil"])
      expect(isLoopbackHost(host)).toBe(false);
  });

  it("serves the local principal on loopback without a principals file (make run)", () => {
    const security = grpcServerSecurity({ GRPC_HOST: "127.0.0.1" }, silentLogger());
    expect(security.authenticator.names()).toEqual(new Set(["local"]));
  });

  it("refuses a non-loopback bind without principals, naming what to set", () => {
    const error = refusal(() => grpcServerSecurity({ GRPC_HOST: "0.0.0.0" }, silentLogger()));
    expect(error.field).toBe("PRINCIPALS_FILE");
    expect(error.message).toContain("INSECURE_ALLOW_UNAUTHENTICATED");
    // The development opt-out is explicit.
    expect(grpcServerSecurity({ GRPC_HOST: "0.0.0.0", INSECURE_ALLOW_UNAUTHENTICATED: true }, silentLogger()).tls).toBe(
      false,
    );
  });

  it("refuses principals off loopback over plaintext: bearer tokens need TLS", () => {
    const error = refusal(() =>
      grpcServerSecurity({ GRPC_HOST: "0.0.0.0", PRINCIPALS_FILE: principalsFile }, silentLogger()),
    );
    expect(error.field).toBe("GRPC_TLS_CERT_FILE");
    const onLoopback = grpcServerSecurity({ GRPC_HOST: "127.0.0.1", PRINCIPALS_FILE: principalsFile }, silentLogger());
    expect(onLoopback.authenticator.names()).toEqual(new Set(["ops"]));
    onLoopback.authenticator.close();
  });

  it("fails start when the removed GRPC_AUTH_TOKENS is still set, naming its replacement and not its value", () => {
    const parsed = z.object(commonConfigShape).safeParse({ GRPC_AUTH_TOKENS: "harness:s3cret-token-0123456789" });
    expect(parsed.success).toBe(false);
    const message = parsed.error?.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("\n") ?? "";
    expect(message).toContain("GRPC_AUTH_TOKENS");
    expect(message).toContain("PRINCIPALS_FILE");
    expect(message).not.toContain("s3cret");
  });

  it("reads a principals file that cannot be read as an error naming the setting, not the OS text", () => {
    const error = refusal(() =>
      grpcServerSecurity({ GRPC_HOST: "127.0.0.1", PRINCIPALS_FILE: join(dir, "missing.json") }, silentLogger()),
    );
    expect(error.field).toBe("PRINCIPALS_FILE");
    expect(error.message).not.toMatch(/no such file/i);
  });
});

describe("the same rules for a listener with other settings (the gateway's HTTP port)", () => {
  const listener = (host: string, tls: { cert?: string; key?: string; ca?: string } = {}): ListenerSettings => ({
    host: { name: "GATEWAY_HOST", value: host },
    certFile: { name: "GATEWAY_TLS_CERT_FILE", value: tls.cert },
    keyFile: { name: "GATEWAY_TLS_KEY_FILE", value: tls.key },
    clientCaFile: { name: "GATEWAY_TLS_CLIENT_CA_FILE", value: tls.ca },
  });

  it("names the listener's own settings in every refusal", () => {
    const open = refusal(() => serverSecurity(listener("0.0.0.0"), {}, silentLogger()));
    expect(open.field).toBe("PRINCIPALS_FILE");
    expect(open.message).toContain("GATEWAY_HOST=0.0.0.0");
    expect(open.message).toContain("GATEWAY_TLS_CERT_FILE");
    const plaintext = refusal(() =>
      serverSecurity(listener("0.0.0.0"), { PRINCIPALS_FILE: principalsFile }, silentLogger()),
    );
    expect(plaintext.field).toBe("GATEWAY_TLS_CERT_FILE");
    expect(refusal(() => serverSecurity(listener("127.0.0.1", { cert: "c.pem" }), {}, silentLogger())).field).toBe(
      "GATEWAY_TLS_KEY_FILE",
    );
    expect(refusal(() => serverSecurity(listener("127.0.0.1", { ca: "ca.pem" }), {}, silentLogger())).field).toBe(
      "GATEWAY_TLS_CLIENT_CA_FILE",
    );
  });

  it("serves principals off loopback with TLS, and the local principal on loopback without a file", () => {
    const secured = serverSecurity(
      listener("0.0.0.0", { cert: "c.pem", key: "k.pem" }),
      { PRINCIPALS_FILE: principalsFile },
      silentLogger(),
    );
    expect(secured.tls).toEqual({ certFile: "c.pem", keyFile: "k.pem", clientCaFile: undefined });
    expect(secured.authenticator.names()).toEqual(new Set(["ops"]));
    secured.authenticator.close();
    const local = serverSecurity(listener("127.0.0.1"), {}, silentLogger());
    expect(local.tls).toBeUndefined();
    expect(local.authenticator.names()).toEqual(new Set(["local"]));
  });
});
