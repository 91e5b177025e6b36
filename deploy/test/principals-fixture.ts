// Principals files for tests: written into a temp dir the way a Kubernetes Secret volume changes
// one (a new file renamed over the old), so a service that polls the file sees one version or the
// next, never half of one. Tokens are random per run; the file holds only their SHA-256.

import { randomBytes } from "node:crypto";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tokenSha256Hex } from "@prefix-guard/grpc";

export type TestRole = "harness" | "peer" | "operator" | "sre" | "subscriber";

/** One entry of the file, with tokens in clear (the fixture hashes them). */
export interface TestPrincipal {
  readonly name: string;
  readonly roles: readonly TestRole[];
  readonly scope?: string;
  readonly owners?: readonly string[];
  readonly workspaces?: readonly string[];
  readonly tokens?: readonly string[];
  readonly certificateNames?: readonly string[];
  readonly requestsPerSecond?: number;
  readonly burst?: number;
  readonly maxSessions?: number;
}

export interface PrincipalsFixture {
  /** The file to set as PRINCIPALS_FILE. */
  readonly path: string;
  /** Replaces the file's content atomically (rotation, revocation). */
  write(principals: readonly TestPrincipal[]): void;
  /** The environment every service of a test needs: the file, and a short reload poll. */
  env(reloadMs?: number): Record<string, string>;
  remove(): void;
}

/** A random bearer token (tokens are per run, so no test depends on a value another one knows). */
export function testToken(label: string): string {
  return `${label}-${randomBytes(16).toString("hex")}`;
}

/** The JSON a service reads; harness grants default to "any" so a test names only what it is about. */
export function principalsFileText(principals: readonly TestPrincipal[]): string {
  return JSON.stringify(
    {
      principals: principals.map((p) => ({
        name: p.name,
        roles: p.roles,
        ...(p.scope === undefined ? {} : { scope: p.scope }),
        ...(p.roles.includes("harness") ? { owners: p.owners ?? ["*"], workspaces: p.workspaces ?? ["*"] } : {}),
        ...(!p.roles.includes("harness") && p.owners !== undefined ? { owners: p.owners } : {}),
        ...(!p.roles.includes("harness") && p.workspaces !== undefined ? { workspaces: p.workspaces } : {}),
        token_sha256: (p.tokens ?? []).map(tokenSha256Hex),
        certificate_names: p.certificateNames ?? [],
        ...(p.requestsPerSecond === undefined ? {} : { requests_per_second: p.requestsPerSecond }),
        ...(p.burst === undefined ? {} : { burst: p.burst }),
        ...(p.maxSessions === undefined ? {} : { max_sessions: p.maxSessions }),
      })),
    },
    null,
    2,
  );
}

export function writePrincipalsFile(principals: readonly TestPrincipal[]): PrincipalsFixture {
  const dir = mkdtempSync(join(tmpdir(), "pg-principals-"));
  const path = join(dir, "principals.json");
  let version = 0;
  const write = (next: readonly TestPrincipal[]) => {
    version += 1;
    const staged = join(dir, `.principals.json.${version}`);
    writeFileSync(staged, principalsFileText(next), { mode: 0o600 });
    renameSync(staged, path);
  };
  write(principals);
  return {
    path,
    write,
    env: (reloadMs = 200) => ({ PRINCIPALS_FILE: path, PRINCIPALS_RELOAD_MS: String(reloadMs) }),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
