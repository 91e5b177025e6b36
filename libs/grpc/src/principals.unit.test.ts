import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Metadata } from "@grpc/grpc-js";
import { UnauthenticatedError, ValidationError } from "@prefix-guard/errors";
import { createLogger } from "@prefix-guard/logging";
import { afterEach, describe, expect, it } from "vitest";
import {
  authenticatePresented,
  authenticateWith,
  type CallCredentials,
  certificateSanNames,
  isLoopbackAddress,
  type PresentedCredentials,
  PrincipalsFileAuthenticator,
  parsePrincipals,
  tokenSha256Hex,
} from "./principals";

const HARNESS_TOKEN = "harness-token-0123456789";
const SRE_TOKEN = "sre-token-abcdefghijklmn";
const HARNESS_HASH = tokenSha256Hex(HARNESS_TOKEN);
const SRE_HASH = tokenSha256Hex(SRE_TOKEN);

const harnessEntry = {
  name: "harness-a",
  roles: ["harness"],
  scope: "team-a",
  owners: ["*"],
  workspaces: ["/srv/a/"],
  token_sha256: [HARNESS_HASH],
};
const sreEntry = { name: "sre", roles: ["sre"], token_sha256: [SRE_HASH] };
const fileOf = (...principals: unknown[]) => JSON.stringify({ principals });

function parseError(text: string): ValidationError {
  try {
    parsePrincipals(text);
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("expected the file to be refused");
}

function call(options: {
  authorization?: string;
  certificateNames?: string[];
  confidential?: boolean;
}): CallCredentials {
  const metadata = new Metadata();
  if (options.authorization !== undefined) metadata.set("authorization", options.authorization);
  return {
    metadata,
    certificateNames: options.certificateNames ?? [],
    confidential: options.confidential ?? true,
  };
}

function authError(run: () => unknown): UnauthenticatedError {
  try {
    run();
  } catch (error) {
    if (error instanceof UnauthenticatedError) return error;
    throw error;
  }
  throw new Error("expected UNAUTHENTICATED");
}

describe("parsePrincipals", () => {
  it("reads principals with their roles, grants and limits", () => {
    const data = parsePrincipals(
      fileOf({ ...harnessEntry, requests_per_second: 5, burst: 10, max_sessions: 3 }, sreEntry),
    );
    expect(data.principals.map((p) => p.name)).toEqual(["harness-a", "sre"]);
    const [harness, sre] = data.principals;
    expect([...(harness?.roles ?? [])]).toEqual(["harness"]);
    expect(harness).toMatchObject({ scope: "team-a", owners: ["*"], workspaces: ["/srv/a/"] });
    expect(harness?.limits).toEqual({ requestsPerSecond: 5, burst: 10, maxSessions: 3 });
    // A fleet principal's scope and grants default to empty.
    expect(sre).toMatchObject({ scope: "", owners: [], workspaces: [] });
    expect(data.tokenDigests.map((d) => d.digest.toString("hex"))).toEqual([HARNESS_HASH, SRE_HASH]);
  });

  it.each([
    ["a role that does not exist", { ...sreEntry, roles: ["admin"] }, "principals[1].roles"],
    ["an upper-case hash", { ...sreEntry, token_sha256: [SRE_HASH.toUpperCase()] }, "principals[1].token_sha256"],
    ["a hash that is too short", { ...sreEntry, token_sha256: ["abc123"] }, "principals[1].token_sha256"],
    ["a name with a space", { ...sreEntry, name: "s r e" }, "principals[1].name"],
    ["no roles", { ...sreEntry, roles: [] }, "principals[1].roles"],
    ["a rate of 0", { ...sreEntry, requests_per_second: 0 }, "principals[1].requests_per_second"],
    ["a burst of 1.5", { ...sreEntry, burst: 1.5 }, "principals[1].burst"],
  ])("names the entry and the field for %s", (_label, entry, where) => {
    const error = parseError(fileOf(harnessEntry, entry));
    expect(error.field).toBe("PRINCIPALS_FILE");
    expect(error.message).toContain(where);
  });

  it.each([
    ["a hash as a role", { ...sreEntry, roles: [SRE_HASH] }],
    ["an upper-case hash", { ...sreEntry, token_sha256: [SRE_HASH.toUpperCase()] }],
    ["a hash where the list goes", { ...sreEntry, token_sha256: SRE_HASH }],
    ["a hash as a rate", { ...sreEntry, requests_per_second: SRE_HASH }],
    ["a hash as the name", { ...sreEntry, name: `${SRE_HASH}-sre` }],
    ["a hash pasted as a key (a map of hash to name)", { name: "sre", roles: ["sre"], [SRE_HASH]: "sre" }],
  ])("never echoes the hash value: %s", (_label, entry) => {
    const error = parseError(fileOf(harnessEntry, entry));
    expect(error.message).toMatch(/principals\[1\]/);
    expect(error.message.toLowerCase()).not.toContain(SRE_HASH.slice(0, 16));
  });

  it("says the file is not JSON without quoting it", () => {
    const error = parseError(`{"principals": [${SRE_HASH}]}`);
    expect(error.message).toBe("PRINCIPALS_FILE: is not valid JSON");
  });

  it("refuses a name used twice, naming the second entry", () => {
    const error = parseError(fileOf(harnessEntry, { ...sreEntry, name: "harness-a" }));
    expect(error.message).toContain("principals[1] (harness-a): the name is used twice");
  });

  it("refuses a token hash listed twice, across entries or within one, without echoing it", () => {
    const across = parseError(fileOf(harnessEntry, { ...sreEntry, token_sha256: [HARNESS_HASH] }));
    expect(across.message).toContain("principals[1] (sre): a token hash is listed twice");
    const within = parseError(fileOf({ ...sreEntry, token_sha256: [SRE_HASH, SRE_HASH] }));
    expect(within.message).toContain("principals[0] (sre): a token hash is listed twice");
    for (const error of [across, within]) expect(error.message).not.toMatch(/[0-9a-f]{16}/);
  });

  it("refuses a certificate name listed twice", () => {
    const error = parseError(
      fileOf(
        { name: "a", roles: ["peer"], certificate_names: ["spiffe://x"] },
        { name: "b", roles: ["sre"], certificate_names: ["spiffe://x"] },
      ),
    );
    expect(error.message).toContain("principals[1] (b): a certificate name is listed twice");
  });

  it("refuses a principal nobody can reach, and a harness without owners or workspaces", () => {
    expect(parseError(fileOf({ name: "nobody", roles: ["sre"] })).message).toContain(
      "needs token_sha256 or certificate_names",
    );
    const { owners: _owners, ...noOwners } = harnessEntry;
    expect(parseError(fileOf(noOwners)).message).toContain("principals[0] (harness-a): a harness needs owners");
    expect(parseError(fileOf({ ...harnessEntry, workspaces: [] })).message).toContain("a harness needs owners");
  });

  it("refuses unknown top-level keys and entry keys (a typo must not drop a grant)", () => {
    expect(parseError(JSON.stringify({ principals: [], extra: 1 })).field).toBe("PRINCIPALS_FILE");
    expect(parseError(fileOf({ ...sreEntry, workspace: ["/srv/a/"] })).message).toContain("principals[0]");
  });
});

describe("authenticateWith", () => {
  const data = parsePrincipals(
    fileOf(harnessEntry, sreEntry, {
      name: "assembly",
      roles: ["peer"],
      certificate_names: ["prompt-assembly.prefix-guard.svc", "spiffe://cluster/ns/pg/sa/assembly"],
    }),
  );

  it("finds the principal whose listed hash is the token's sha256", () => {
    expect(authenticateWith(data, call({ authorization: `Bearer ${HARNESS_TOKEN}` })).name).toBe("harness-a");
    expect(authenticateWith(data, call({ authorization: `Bearer ${SRE_TOKEN}` })).name).toBe("sre");
  });

  it("does not accept the hash itself as a token", () => {
    expect(authError(() => authenticateWith(data, call({ authorization: `Bearer ${SRE_HASH}` }))).reason).toBe(
      "invalid_token",
    );
  });

  it.each([
    ["one character", "x"],
    ["a prefix of a real token", SRE_TOKEN.slice(0, 10)],
    ["a real token with a suffix", `${SRE_TOKEN}x`],
    ["64 KB", "t".repeat(65_536)],
    ["empty", ""],
  ])("refuses a token of another length (%s) as invalid, not with an exception", (_label, token) => {
    const error = authError(() => authenticateWith(data, call({ authorization: `Bearer ${token}` })));
    expect(error.reason).toBe("invalid_token");
    expect(error.message).not.toContain(token.length > 0 ? token.slice(0, 8) : "Bearer");
  });

  it("refuses a bearer token over a channel that is not confidential, even a valid one", () => {
    const error = authError(() =>
      authenticateWith(data, call({ authorization: `Bearer ${SRE_TOKEN}`, confidential: false })),
    );
    expect(error.reason).toBe("token_over_plaintext");
  });

  it("refuses an authorization header that is not `Bearer <token>`", () => {
    expect(authError(() => authenticateWith(data, call({ authorization: SRE_TOKEN }))).reason).toBe(
      "bad_authorization",
    );
    expect(authError(() => authenticateWith(data, call({ authorization: `Basic ${SRE_TOKEN}` }))).reason).toBe(
      "bad_authorization",
    );
  });

  it("finds a principal by any of its certificate names, and refuses an unknown certificate", () => {
    expect(
      authenticateWith(data, call({ certificateNames: ["other", "spiffe://cluster/ns/pg/sa/assembly"] })).name,
    ).toBe("assembly");
    expect(authError(() => authenticateWith(data, call({ certificateNames: ["client"] }))).reason).toBe(
      "unknown_certificate",
    );
  });

  it("lets a token win over a certificate, and never falls back to the certificate for a bad token", () => {
    const certificateNames = ["prompt-assembly.prefix-guard.svc"];
    expect(authenticateWith(data, call({ authorization: `Bearer ${SRE_TOKEN}`, certificateNames })).name).toBe("sre");
    expect(
      authError(() => authenticateWith(data, call({ authorization: "Bearer wrong-token", certificateNames }))).reason,
    ).toBe("invalid_token");
  });

  it("refuses a call with neither token nor certificate", () => {
    expect(authError(() => authenticateWith(data, call({}))).reason).toBe("missing_credentials");
  });
});

describe("authenticatePresented (any transport)", () => {
  const data = parsePrincipals(fileOf(harnessEntry, sreEntry));
  const presented = (bearerToken: string | undefined, confidential = true): PresentedCredentials => ({
    bearerToken,
    tokenCarrier: "x-prefix-guard-token",
    certificateNames: [],
    confidential,
  });

  it("finds a principal by the bare token, with no scheme to parse", () => {
    expect(authenticatePresented(data, presented(HARNESS_TOKEN)).name).toBe("harness-a");
    expect(authError(() => authenticatePresented(data, presented(`Bearer ${HARNESS_TOKEN}`))).reason).toBe(
      "invalid_token",
    );
  });

  it("names where the transport expects the token when none was presented", () => {
    const error = authError(() => authenticatePresented(data, presented(undefined)));
    expect(error.reason).toBe("missing_credentials");
    expect(error.message).toContain("x-prefix-guard-token");
  });

  it("refuses a valid token that crossed a network in clear", () => {
    expect(authError(() => authenticatePresented(data, presented(SRE_TOKEN, false))).reason).toBe(
      "token_over_plaintext",
    );
  });
});

describe("isLoopbackAddress", () => {
  it("knows IPv4, IPv6 and IPv4-mapped loopback addresses, and nothing else", () => {
    for (const address of ["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1"])
      expect(isLoopbackAddress(address), address).toBe(true);
    for (const address of ["10.0.0.1", "::ffff:10.0.0.1", "::", "0.0.0.0", "128.0.0.1"])
      expect(isLoopbackAddress(address), address).toBe(false);
  });
});

describe("certificateSanNames", () => {
  it("reads DNS and URI names from Node's subjectaltname", () => {
    expect(certificateSanNames("DNS:a, URI:spiffe://x")).toEqual(["a", "spiffe://x"]);
    expect(certificateSanNames("DNS:a.example,DNS:b.example")).toEqual(["a.example", "b.example"]);
  });

  it("ignores IP addresses, e-mail names and malformed parts", () => {
    expect(certificateSanNames("IP Address:127.0.0.1, email:x@y, :nothing, DNS:kept")).toEqual(["kept"]);
  });

  it("gives nothing for a certificate without SANs", () => {
    expect(certificateSanNames(undefined)).toEqual([]);
    expect(certificateSanNames("")).toEqual([]);
  });
});

describe("PrincipalsFileAuthenticator", () => {
  const dirs: string[] = [];
  const authenticators: PrincipalsFileAuthenticator[] = [];
  afterEach(() => {
    for (const authenticator of authenticators.splice(0)) authenticator.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** A principals file, rewritten the way a Secret volume swaps it: a new file renamed over the old. */
  function principalsFile(text: string) {
    const dir = mkdtempSync(join(tmpdir(), "pg-principals-unit-"));
    dirs.push(dir);
    const path = join(dir, "principals.json");
    let version = 0;
    const write = (next: string) => {
      version += 1;
      const staged = join(dir, `.principals.${version}`);
      writeFileSync(staged, next);
      renameSync(staged, path);
    };
    write(text);
    return { path, write };
  }

  function capturingLogger() {
    const lines: string[] = [];
    const logger = createLogger({
      service: "principals-test",
      level: "info",
      destination: { write: (line: string) => void lines.push(line) },
    });
    return { logger, lines };
  }

  function start(path: string, logger = capturingLogger().logger) {
    // A poll far in the future: the test calls reload() itself, so nothing depends on timing.
    const authenticator = new PrincipalsFileAuthenticator(path, logger, 600_000);
    authenticators.push(authenticator);
    return authenticator;
  }

  const bearer = (token: string): PresentedCredentials => ({
    bearerToken: token,
    tokenCarrier: "x-test-token",
    certificateNames: [],
    confidential: true,
  });

  it("names the setting and the errno code, not the path, when the file cannot be read", () => {
    const missing = join(tmpdir(), "pg-no-such-dir", "principals.json");
    let error: unknown;
    try {
      start(missing);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).message).toBe("PRINCIPALS_FILE: cannot read the principals file (ENOENT)");
  });

  it("re-reads nothing while the file is unchanged", () => {
    const file = principalsFile(fileOf(harnessEntry));
    expect(start(file.path).reload()).toBe(false);
  });

  it("rotates a token on reload: the new one is accepted, the removed one refused", () => {
    const file = principalsFile(fileOf(harnessEntry, sreEntry));
    const authenticator = start(file.path);
    expect(authenticator.authenticate(bearer(SRE_TOKEN)).name).toBe("sre");
    const rotated = "sre-token-rotated-000000";
    file.write(fileOf(harnessEntry, { ...sreEntry, token_sha256: [tokenSha256Hex(rotated)] }));
    expect(authenticator.reload()).toBe(true);
    expect(authenticator.authenticate(bearer(rotated)).name).toBe("sre");
    expect(() => authenticator.authenticate(bearer(SRE_TOKEN))).toThrow(UnauthenticatedError);
    expect(authenticator.names()).toEqual(new Set(["harness-a", "sre"]));
  });

  it("keeps the previous file in force when the new one is invalid, and logs no hash", () => {
    const file = principalsFile(fileOf(harnessEntry, sreEntry));
    const { logger, lines } = capturingLogger();
    const authenticator = start(file.path, logger);
    // Invalid: the sre entry's hash pasted into roles.
    file.write(fileOf(harnessEntry, { ...sreEntry, roles: [SRE_HASH] }));
    expect(authenticator.reload()).toBe(false);
    expect(authenticator.authenticate(bearer(SRE_TOKEN)).name).toBe("sre");
    expect(authenticator.authenticate(bearer(HARNESS_TOKEN)).name).toBe("harness-a");
    const rejected = lines.filter((line) => line.includes("principals file rejected"));
    expect(rejected).toHaveLength(1);
    expect(rejected[0]).toContain("principals[1].roles");
    expect(lines.join("\n")).not.toContain(SRE_HASH.slice(0, 16));
    // The bad version is not retried on every poll; a later good one is taken.
    expect(authenticator.reload()).toBe(false);
    file.write(fileOf(harnessEntry));
    expect(authenticator.reload()).toBe(true);
    expect(() => authenticator.authenticate(bearer(SRE_TOKEN))).toThrow(UnauthenticatedError);
  });

  it("keeps the previous file in force when the file disappears", () => {
    const file = principalsFile(fileOf(sreEntry));
    const authenticator = start(file.path);
    rmSync(file.path);
    expect(authenticator.reload()).toBe(false);
    expect(authenticator.authenticate(bearer(SRE_TOKEN)).name).toBe("sre");
  });
});
