// The container probe's settings, each refusal naming the variable to fix (the e2e in
// compiled-service.e2e.test.ts runs the probe itself against plaintext, TLS and mTLS servers).
import { describe, expect, it } from "vitest";
import { defaultHealthProbeTimeoutMs, parseHealthProbeEnv } from "../docker/health-probe-config";

describe("parseHealthProbeEnv", () => {
  it("is plaintext with the default deadline when the service serves plaintext", () => {
    expect(parseHealthProbeEnv({})).toEqual({ deadlineMs: defaultHealthProbeTimeoutMs });
  });

  it("follows the service into TLS and mTLS, with the files and server name given", () => {
    expect(
      parseHealthProbeEnv({
        GRPC_TLS_CERT_FILE: "/tls/tls.crt",
        GRPC_TLS_CLIENT_CA_FILE: "/tls/ca.crt",
        HEALTH_PROBE_CA_FILE: "/tls/ca.crt",
        HEALTH_PROBE_CERT_FILE: "/tls/probe.crt",
        HEALTH_PROBE_KEY_FILE: "/tls/probe.key",
        HEALTH_PROBE_SERVER_NAME: "session-events.prefix-guard.svc",
        HEALTH_PROBE_TIMEOUT_MS: "2500",
      }),
    ).toEqual({
      caFile: "/tls/ca.crt",
      client: { certFile: "/tls/probe.crt", keyFile: "/tls/probe.key" },
      serverName: "session-events.prefix-guard.svc",
      deadlineMs: 2_500,
    });
  });

  it.each([
    [{ GRPC_TLS_CERT_FILE: "/tls/tls.crt" }, "HEALTH_PROBE_CA_FILE"],
    [
      { GRPC_TLS_CERT_FILE: "/c", GRPC_TLS_CLIENT_CA_FILE: "/ca", HEALTH_PROBE_CA_FILE: "/ca" },
      "HEALTH_PROBE_CERT_FILE",
    ],
    [
      { GRPC_TLS_CLIENT_CA_FILE: "/ca", HEALTH_PROBE_CA_FILE: "/ca", HEALTH_PROBE_CERT_FILE: "/p.crt" },
      "HEALTH_PROBE_KEY_FILE",
    ],
    [{ HEALTH_PROBE_CA_FILE: "/ca", HEALTH_PROBE_KEY_FILE: "/p.key" }, "HEALTH_PROBE_CERT_FILE"],
    [{ HEALTH_PROBE_SERVER_NAME: "svc.example" }, "HEALTH_PROBE_CA_FILE"],
    [{ HEALTH_PROBE_TIMEOUT_MS: "soon" }, "HEALTH_PROBE_TIMEOUT_MS"],
    [{ HEALTH_PROBE_TIMEOUT_MS: "0" }, "HEALTH_PROBE_TIMEOUT_MS"],
  ])("refuses %j, naming %s", (env, field) => {
    expect(() => parseHealthProbeEnv(env)).toThrow(expect.objectContaining({ field }));
  });
});
