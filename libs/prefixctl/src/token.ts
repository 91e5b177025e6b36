// `prefixctl token new` and `prefixctl token hash`: what an operator needs to add a principal to the
// principals file, which holds only SHA-256 digests. A token is never taken as an argument (it would
// land in shell history and in `ps`): `hash` reads it from standard input.

import { randomBytes } from "node:crypto";
import { tokenSha256Hex } from "@prefix-guard/grpc";

export type TokenCommand =
  | { readonly kind: "token-new"; readonly json: boolean }
  | { readonly kind: "token-hash"; readonly json: boolean };

/** A token of 256 random bits; the prefix makes a leaked one easy to find with a secret scanner. */
export function newToken(random: (bytes: number) => Buffer = randomBytes): string {
  return `pgt_${random(32).toString("base64url")}`;
}

/** `token new` / `token hash` with their one flag, or a usage message. */
export function parseTokenCommand(argv: readonly string[]): TokenCommand | { readonly error: string } {
  const [, sub, ...rest] = argv;
  const flags = rest.filter((arg) => arg !== "--json");
  if (flags.length > 0)
    return {
      error:
        sub === "hash"
          ? "token hash reads the token from standard input, never from an argument"
          : `token ${sub ?? ""} takes only --json`.trim(),
    };
  const json = rest.includes("--json");
  if (sub === "new") return { kind: "token-new", json };
  if (sub === "hash") return { kind: "token-hash", json };
  return { error: sub === undefined ? "token needs a subcommand: new or hash" : `unknown token subcommand '${sub}'` };
}

/** What `token new` prints: the token once (hand it to the client) and the digest for the file. */
export function formatNewToken(token: string, json: boolean): string {
  const sha256 = tokenSha256Hex(token);
  if (json) return `${JSON.stringify({ token, token_sha256: sha256 }, null, 2)}\n`;
  return `token         ${token}\ntoken_sha256  ${sha256}\nGive the token to the client once; put only token_sha256 in the principals file.\n`;
}

/** The digest of the first line of `input` (a trailing newline from `echo` is not part of the token). */
export function hashTokenInput(input: string): string | { readonly error: string } {
  const token = input.split(/\r?\n/, 1)[0] ?? "";
  if (token.length === 0) return { error: "token hash: no token on standard input" };
  return tokenSha256Hex(token);
}
