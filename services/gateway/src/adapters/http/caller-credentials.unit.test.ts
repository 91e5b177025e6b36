import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { presentedOverHttp } from "./caller-credentials";

const request = (headers: Record<string, string | string[]>, remoteAddress: string, subjectaltname?: string) =>
  ({
    headers,
    socket: { remoteAddress, getPeerCertificate: () => (subjectaltname === undefined ? {} : { subjectaltname }) },
  }) as unknown as IncomingMessage;

const plain = { enabled: false, clientCertificates: false };

describe("presentedOverHttp", () => {
  it("takes the token of x-prefix-guard-token as it is, and names the header for a missing one", () => {
    const presented = presentedOverHttp(request({ "x-prefix-guard-token": "t0k3n" }, "127.0.0.1"), plain);
    expect(presented).toMatchObject({ bearerToken: "t0k3n", tokenCarrier: "x-prefix-guard-token header" });
    // The provider's own key is the provider's: it never authenticates anyone here.
    expect(presentedOverHttp(request({ authorization: "Bearer sk-provider" }, "127.0.0.1"), plain).bearerToken).toBe(
      undefined,
    );
  });

  it("holds a token confidential over TLS or from loopback only", () => {
    const token = { "x-prefix-guard-token": "t" };
    expect(presentedOverHttp(request(token, "127.0.0.1"), plain).confidential).toBe(true);
    expect(presentedOverHttp(request(token, "::ffff:127.0.0.1"), plain).confidential).toBe(true);
    expect(presentedOverHttp(request(token, "10.1.2.3"), plain).confidential).toBe(false);
    expect(
      presentedOverHttp(request(token, "10.1.2.3"), { enabled: true, clientCertificates: false }).confidential,
    ).toBe(true);
  });

  it("reads the client certificate's names only when the listener asks for certificates", () => {
    const req = request({}, "10.1.2.3", "DNS:harness.team-a, URI:spiffe://team-a/harness");
    expect(presentedOverHttp(req, { enabled: true, clientCertificates: true }).certificateNames).toEqual([
      "harness.team-a",
      "spiffe://team-a/harness",
    ]);
    expect(presentedOverHttp(req, { enabled: true, clientCertificates: false }).certificateNames).toEqual([]);
  });
});
