// Authentication: who is calling. A principal is named by a bearer token (the principals file holds
// only the token's SHA-256) or by an mTLS client certificate (a SAN listed for it). The file is
// shared by every service and reloaded when it changes, so a token is rotated by adding the new hash,
// moving the clients, and removing the old one, without a restart.
//
// Everything but `presentedOverGrpc` is transport-neutral: the gRPC servers read the token from the
// `authorization` metadata, the gateway from its own HTTP header, and both ask the same questions.

import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync, statSync, unwatchFile, watchFile } from "node:fs";
import type { Metadata } from "@grpc/grpc-js";
import { type Principal, ROLES, type Role } from "@prefix-guard/access";
import { UnauthenticatedError, ValidationError } from "@prefix-guard/errors";
import type { Logger } from "@prefix-guard/logging";
import { z } from "zod";

const SHA256_HEX = /^[0-9a-f]{64}$/;
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

const principalEntry = z
  .object({
    name: z.string().regex(NAME, "must be 1-64 characters of [A-Za-z0-9_.-]"),
    roles: z.array(z.enum(ROLES)).min(1, "must name at least one role"),
    scope: z.string().max(128).default(""),
    owners: z.array(z.string().min(1).max(128)).default([]),
    workspaces: z.array(z.string().min(1).max(512)).default([]),
    token_sha256: z
      .array(z.string().regex(SHA256_HEX, "must be 64 lowercase hex characters (prefixctl token hash)"))
      .default([]),
    certificate_names: z.array(z.string().min(1).max(253)).default([]),
    requests_per_second: z.number().positive().max(1_000_000).optional(),
    burst: z.number().int().positive().max(10_000_000).optional(),
    max_sessions: z.number().int().positive().max(1_000_000_000).optional(),
  })
  .strict();

const principalsFile = z.object({ principals: z.array(principalEntry).max(10_000) }).strict();

export interface PrincipalDirectoryData {
  readonly principals: readonly Principal[];
  /** Token digest (hex) → principal; every digest is compared, whatever matches. */
  readonly tokenDigests: ReadonlyArray<{ readonly digest: Buffer; readonly principal: Principal }>;
  /** Certificate SAN value (DNS name or URI) → principal. */
  readonly certificateNames: ReadonlyMap<string, Principal>;
}

/**
 * Parses and checks a principals file. Errors name the entry and the field, and never echo a value
 * (a hash pasted into the wrong field must not end up in a log).
 */
export function parsePrincipals(text: string, source = "PRINCIPALS_FILE"): PrincipalDirectoryData {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ValidationError(source, "is not valid JSON");
  }
  const parsed = principalsFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const [, index, ...rest] = issue?.path ?? [];
    const path = issue?.path ?? [];
    const where =
      index === undefined
        ? path.length > 0
          ? `${path.join(".")}: `
          : ""
        : `principals[${String(index)}]${rest.length ? `.${rest.join(".")}` : ""}: `;
    // zod names unknown keys verbatim; a key can be a pasted secret, so only field-like names are shown.
    const message =
      issue?.code === "unrecognized_keys"
        ? `unknown field ${issue.keys.map((key) => (/^[a-z_]{1,40}$/.test(key) ? key : "(not shown)")).join(", ")}`
        : (issue?.message ?? "invalid");
    throw new ValidationError(source, `${where}${message}`);
  }
  const principals: Principal[] = [];
  const tokenDigests: Array<{ digest: Buffer; principal: Principal }> = [];
  const certificateNames = new Map<string, Principal>();
  const names = new Set<string>();
  const digests = new Set<string>();
  parsed.data.principals.forEach((entry, index) => {
    const at = `principals[${index}] (${entry.name})`;
    if (names.has(entry.name)) throw new ValidationError(source, `${at}: the name is used twice`);
    names.add(entry.name);
    if (entry.token_sha256.length === 0 && entry.certificate_names.length === 0)
      throw new ValidationError(source, `${at}: needs token_sha256 or certificate_names to be reachable`);
    if (entry.roles.includes("harness") && (entry.owners.length === 0 || entry.workspaces.length === 0))
      throw new ValidationError(source, `${at}: a harness needs owners and workspaces (["*"] for any)`);
    const principal: Principal = Object.freeze({
      name: entry.name,
      roles: new Set<Role>(entry.roles),
      scope: entry.scope,
      owners: entry.owners,
      workspaces: entry.workspaces,
      limits: {
        requestsPerSecond: entry.requests_per_second,
        burst: entry.burst,
        maxSessions: entry.max_sessions,
      },
    });
    principals.push(principal);
    for (const hex of entry.token_sha256) {
      if (digests.has(hex)) throw new ValidationError(source, `${at}: a token hash is listed twice`);
      digests.add(hex);
      tokenDigests.push({ digest: Buffer.from(hex, "hex"), principal });
    }
    for (const name of entry.certificate_names) {
      if (certificateNames.has(name)) throw new ValidationError(source, `${at}: a certificate name is listed twice`);
      certificateNames.set(name, principal);
    }
  });
  return { principals, tokenDigests, certificateNames };
}

/** SHA-256 of a bearer token, as the principals file lists it. */
export function tokenSha256Hex(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** The SAN values of a peer certificate's `subjectaltname` ("DNS:a, URI:spiffe://b"). */
export function certificateSanNames(subjectAltName: string | undefined): string[] {
  if (!subjectAltName) return [];
  const names: string[] = [];
  for (const part of subjectAltName.split(",")) {
    const trimmed = part.trim();
    const colon = trimmed.indexOf(":");
    if (colon <= 0) continue;
    const kind = trimmed.slice(0, colon);
    if (kind === "DNS" || kind === "URI") names.push(trimmed.slice(colon + 1));
  }
  return names;
}

/** Whether a peer's IP address (as a socket reports it) is this machine's loopback. */
export function isLoopbackAddress(address: string): boolean {
  return address.startsWith("127.") || address === "::1" || address.startsWith("::ffff:127.");
}

/** How a gRPC call presented itself: its metadata and, over TLS, the client certificate's SANs. */
export interface CallCredentials {
  readonly metadata: Metadata;
  readonly certificateNames: readonly string[];
  /** The transport is TLS, or the peer is on loopback: a bearer token did not cross a network in clear. */
  readonly confidential: boolean;
}

/** What a caller presented, whatever the transport. */
export interface PresentedCredentials {
  /** The bearer token itself (no scheme); undefined when the caller sent none. */
  readonly bearerToken: string | undefined;
  /** Where the transport carries the token, named in the error when it is missing. */
  readonly tokenCarrier: string;
  /** The client certificate's SAN values (DNS and URI), over mTLS. */
  readonly certificateNames: readonly string[];
  /** The transport is TLS, or the peer is on loopback: a bearer token did not cross a network in clear. */
  readonly confidential: boolean;
}

const GRPC_TOKEN_CARRIER = "authorization: Bearer <token>";

/** A gRPC call's credentials: the token of its `authorization: Bearer <token>` metadata. */
export function presentedOverGrpc(call: CallCredentials): PresentedCredentials {
  const header = call.metadata.get("authorization")[0];
  if (header !== undefined && (typeof header !== "string" || !header.startsWith("Bearer ")))
    throw new UnauthenticatedError("authorization must be `Bearer <token>`", { reason: "bad_authorization" });
  return {
    bearerToken: header === undefined ? undefined : header.slice("Bearer ".length),
    tokenCarrier: GRPC_TOKEN_CARRIER,
    certificateNames: call.certificateNames,
    confidential: call.confidential,
  };
}

export interface Authenticator {
  /** The calling principal; UNAUTHENTICATED when the caller names none. */
  authenticate(presented: PresentedCredentials): Principal;
  /** Principal names currently known (rate-limiter housekeeping after a reload). */
  names(): ReadonlySet<string>;
  close(): void;
}

/** Every call is the local principal: a server without a principals file (loopback or opted out). */
export function localAuthenticator(principal: Principal): Authenticator {
  const names = new Set([principal.name]);
  return { authenticate: () => principal, names: () => names, close: () => undefined };
}

/**
 * Authenticates against a principals file, re-read when its size or times change (polled, since a
 * Kubernetes Secret volume swaps a symlink rather than writing the file). A file that becomes
 * invalid is reported and the last good one stays in force.
 */
export class PrincipalsFileAuthenticator implements Authenticator {
  private data: PrincipalDirectoryData;
  private identity: string;
  private readonly listener: () => void;

  constructor(
    private readonly path: string,
    private readonly logger: Logger,
    pollMs = 2_000,
  ) {
    this.data = this.load();
    this.identity = this.fileIdentity();
    this.listener = () => this.reload();
    watchFile(path, { interval: pollMs, persistent: false }, this.listener);
  }

  private load(): PrincipalDirectoryData {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
      throw new ValidationError("PRINCIPALS_FILE", `cannot read the principals file (${code})`);
    }
    return parsePrincipals(text);
  }

  private fileIdentity(): string {
    try {
      const stat = statSync(this.path, { bigint: true });
      return `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
    } catch {
      return "missing";
    }
  }

  /** Re-reads the file when it changed; public so tests and SIGHUP handlers need not wait for the poll. */
  reload(): boolean {
    const identity = this.fileIdentity();
    if (identity === this.identity) return false;
    try {
      this.data = this.load();
      this.identity = identity;
      this.logger.info({ principals: this.data.principals.length }, "principals file reloaded");
      return true;
    } catch (error) {
      this.identity = identity;
      this.logger.error(
        { reason: error instanceof Error ? error.message : String(error) },
        "principals file rejected; the previous one stays in force",
      );
      return false;
    }
  }

  names(): ReadonlySet<string> {
    return new Set(this.data.principals.map((principal) => principal.name));
  }

  authenticate(presented: PresentedCredentials): Principal {
    return authenticatePresented(this.data, presented);
  }

  close(): void {
    unwatchFile(this.path, this.listener);
  }
}

const ZERO_DIGEST = Buffer.alloc(32);

/** A gRPC call's principal (see authenticatePresented). */
export function authenticateWith(data: PrincipalDirectoryData, call: CallCredentials): Principal {
  return authenticatePresented(data, presentedOverGrpc(call));
}

/**
 * A bearer token wins over a certificate (a client may carry both); a token that matches nothing is
 * refused even when the certificate would have matched, so a mistyped token never falls back silently.
 */
export function authenticatePresented(data: PrincipalDirectoryData, presented: PresentedCredentials): Principal {
  const token = presented.bearerToken;
  if (token !== undefined) {
    if (!presented.confidential)
      throw new UnauthenticatedError("bearer tokens are refused over plaintext off loopback: use TLS", {
        reason: "token_over_plaintext",
      });
    // Hashing first makes every comparison 32 bytes, whatever the presented token's length, and
    // every digest is compared (no early exit), so timing tells nothing about which one matched.
    const presentedDigest = createHash("sha256").update(token, "utf8").digest();
    let found: Principal | undefined;
    for (const { digest, principal } of data.tokenDigests) {
      if (timingSafeEqual(presentedDigest, digest)) found = principal;
    }
    timingSafeEqual(presentedDigest, ZERO_DIGEST);
    if (found === undefined) throw new UnauthenticatedError("invalid bearer token", { reason: "invalid_token" });
    return found;
  }
  for (const name of presented.certificateNames) {
    const principal = data.certificateNames.get(name);
    if (principal !== undefined) return principal;
  }
  if (presented.certificateNames.length > 0)
    throw new UnauthenticatedError("the client certificate names no principal", { reason: "unknown_certificate" });
  throw new UnauthenticatedError(`missing bearer token (${presented.tokenCarrier}) or client certificate`, {
    reason: "missing_credentials",
  });
}
