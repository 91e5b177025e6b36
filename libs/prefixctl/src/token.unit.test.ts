import { createHash } from "node:crypto";
import { parsePrincipals } from "@prefix-guard/grpc";
import { describe, expect, it } from "vitest";
import { exitCodes, run } from "./run";
import { hashTokenInput, newToken, parseTokenCommand } from "./token";

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: { stdout: { write: (t: string) => out.push(t) }, stderr: { write: (t: string) => err.push(t) } },
    out: () => out.join(""),
    err: () => err.join(""),
  };
}

describe("prefixctl token", () => {
  it("makes tokens of 256 random bits, each new", () => {
    const a = newToken();
    expect(a).toMatch(/^pgt_[A-Za-z0-9_-]{43}$/);
    expect(newToken()).not.toBe(a);
  });

  it("prints a new token with the digest the principals file takes", async () => {
    const cli = io();
    expect(await run(["token", "new", "--json"], cli.io)).toBe(exitCodes.ok);
    const printed = JSON.parse(cli.out()) as { token: string; token_sha256: string };
    expect(printed.token_sha256).toBe(createHash("sha256").update(printed.token).digest("hex"));
    // The digest is accepted by the same parser every service uses.
    const file = { principals: [{ name: "ops", roles: ["operator"], token_sha256: [printed.token_sha256] }] };
    expect(parsePrincipals(JSON.stringify(file)).tokenDigests).toHaveLength(1);
  });

  it("hashes a token from standard input only, ignoring echo's newline", async () => {
    const cli = io();
    const code = await run(["token", "hash"], cli.io, { readStdin: async () => "s3cret-token-value\n" });
    expect(code).toBe(exitCodes.ok);
    expect(cli.out()).toBe(`${createHash("sha256").update("s3cret-token-value").digest("hex")}\n`);
    expect(hashTokenInput("")).toEqual({ error: "token hash: no token on standard input" });
  });

  it("refuses a token given as an argument, and says why, without echoing it", async () => {
    const cli = io();
    expect(await run(["token", "hash", "s3cret-token-value"], cli.io)).toBe(exitCodes.usage);
    expect(cli.err()).toContain("reads the token from standard input");
    expect(cli.err()).not.toContain("s3cret-token-value");
    expect(parseTokenCommand(["token"])).toEqual({ error: "token needs a subcommand: new or hash" });
  });
});
