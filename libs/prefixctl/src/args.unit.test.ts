import { describe, expect, it } from "vitest";
import {
  type Command,
  defaultAdviseLimit,
  defaultCollapseLimit,
  defaultRefreshReason,
  defaultTargets,
  defaultTimeoutMs,
  defaultTraceLimit,
  defaultWindowMs,
  parseArgs,
  type UsageError,
} from "./args";

function command(argv: string[], env = {}): Command {
  const parsed = parseArgs(argv, env);
  if (parsed.kind === "usage_error") throw new Error(`unexpected usage error: ${parsed.message}`);
  return parsed;
}

function usageError(argv: string[], env = {}): UsageError {
  const parsed = parseArgs(argv, env);
  if (parsed.kind !== "usage_error") throw new Error(`expected a usage error, got ${parsed.kind}`);
  return parsed;
}

describe("parseArgs: collapses", () => {
  it("defaults to the last 24h, no session filter, default limit, text output fitting 120 columns, 5s deadline", () => {
    expect(command(["collapses"])).toEqual({
      kind: "collapses",
      windowMs: defaultWindowMs,
      windowLabel: "24h",
      sessionId: null,
      limit: defaultCollapseLimit,
      json: false,
      wide: false,
      timeoutMs: defaultTimeoutMs,
      targets: defaultTargets,
      security: { tls: false, caFile: null, certFile: null, keyFile: null, token: null },
    });
    expect(defaultWindowMs).toBe(24 * 3_600_000);
    expect(command(["trace", "811", "--wide"])).toMatchObject({ kind: "trace", wide: true });
  });

  it("reads TLS and token options from flags before the environment; a CA or client certificate implies TLS", () => {
    expect(command(["trace", "811", "--ca", "/etc/pg/ca.pem", "--token", "sre-token"])).toMatchObject({
      security: { tls: true, caFile: "/etc/pg/ca.pem", certFile: null, keyFile: null, token: "sre-token" },
    });
    const env = { PREFIXCTL_TLS: "1", PREFIXCTL_TOKEN: "from-env", PREFIXCTL_CERT: "/c.pem", PREFIXCTL_KEY: "/k.pem" };
    expect(parseArgs(["collapses", "--token=from-flag"], env)).toMatchObject({
      security: { tls: true, caFile: null, certFile: "/c.pem", keyFile: "/k.pem", token: "from-flag" },
    });
    expect(parseArgs(["collapses", "--cert", "/c.pem"], {})).toMatchObject({
      kind: "usage_error",
      message: "--cert and --key go together (a client certificate needs its key)",
    });
  });

  it("reads --since, --session, --limit and --json in any order and in --flag=value form", () => {
    const parsed = command(["--json", "collapses", "--limit=20", "--since", "7d", "--session=811"]);
    expect(parsed).toMatchObject({
      kind: "collapses",
      windowMs: 7 * 86_400_000,
      sessionId: "811",
      limit: 20,
      json: true,
    });
  });

  it("takes --since all as the whole retention (no window)", () => {
    expect(command(["collapses", "--since", "all"])).toMatchObject({ windowMs: null, windowLabel: "all" });
  });

  it("names --since and the bad value when the duration is invalid", () => {
    for (const bad of ["24", "yesterday", "0h", "-1d", "1.5h"]) {
      const error = usageError(["collapses", "--since", bad]);
      expect(error.message).toContain("--since");
      expect(error.message).toContain(`'${bad}'`);
      expect(error.showUsage).toBe(false);
    }
  });

  it("says a value is missing instead of swallowing the next flag", () => {
    expect(usageError(["collapses", "--since"]).message).toBe("--since needs a value");
    expect(usageError(["collapses", "--since", "--json"]).message).toBe("--since needs a value");
  });

  it("rejects a limit that is not a positive whole number", () => {
    for (const bad of ["0", "-3", "2.5", "ten", "100001"]) {
      expect(usageError(["collapses", "--limit", bad]).message).toContain("--limit");
    }
  });

  it("rejects positional arguments and an empty --session", () => {
    expect(usageError(["collapses", "811"]).message).toContain("--session");
    expect(usageError(["collapses", "--session", " "]).message).toBe("--session must not be empty");
  });

  it("rejects a flag given twice", () => {
    expect(usageError(["collapses", "--since", "1h", "--since", "2h"]).message).toBe("--since given twice");
  });
});

describe("parseArgs: session commands", () => {
  it("advise takes one SESSION and a limit of calls", () => {
    expect(command(["advise", "811"])).toMatchObject({ kind: "advise", sessionId: "811", limit: defaultAdviseLimit });
    expect(command(["advise", "811", "--limit", "50", "--json"])).toMatchObject({ limit: 50, json: true });
    expect(usageError(["advise"]).message).toContain("SESSION");
    expect(usageError(["advise", "811", "--since", "1h"]).message).toBe("advise does not take --since");
  });

  it("trace takes one SESSION and a limit", () => {
    expect(command(["trace", "811"])).toMatchObject({ kind: "trace", sessionId: "811", limit: defaultTraceLimit });
    expect(command(["trace", "811", "--limit", "5", "--json"])).toMatchObject({ limit: 5, json: true });
  });

  it("requires exactly one SESSION", () => {
    expect(usageError(["trace"]).message).toContain("SESSION");
    expect(usageError(["trace", "811", "756"]).message).toContain("one SESSION");
    expect(usageError(["replay"]).message).toContain("replay needs a SESSION");
    expect(usageError(["snapshot", "get"]).message).toContain("snapshot get needs a SESSION");
  });

  it("snapshot get / refresh, with the refresh reason defaulting", () => {
    expect(command(["snapshot", "get", "811"])).toMatchObject({ kind: "snapshot-get", sessionId: "811" });
    expect(command(["snapshot", "refresh", "811"])).toMatchObject({
      kind: "snapshot-refresh",
      sessionId: "811",
      reason: defaultRefreshReason,
    });
    expect(command(["snapshot", "refresh", "811", "--reason", "agents-md-fixed"])).toMatchObject({
      reason: "agents-md-fixed",
    });
  });

  it("replay takes a SESSION", () => {
    expect(command(["replay", "756", "--json"])).toMatchObject({ kind: "replay", sessionId: "756", json: true });
  });

  it("rejects flags that belong to another command", () => {
    expect(usageError(["trace", "811", "--since", "1h"]).message).toBe("trace does not take --since");
    expect(usageError(["snapshot", "get", "811", "--reason", "x"]).message).toBe("snapshot get does not take --reason");
    expect(usageError(["collapses", "--reason", "x"]).message).toBe("collapses does not take --reason");
  });

  it("-- ends options, so a session id may start with a dash", () => {
    expect(command(["trace", "--", "-odd"])).toMatchObject({ sessionId: "-odd" });
  });
});

describe("parseArgs: help and unknown input", () => {
  it("help, --help and -h anywhere ask for help", () => {
    for (const argv of [["help"], ["--help"], ["-h"], ["collapses", "--help"], ["trace", "-h"]]) {
      expect(command(argv)).toEqual({ kind: "help" });
    }
  });

  it("no command and unknown commands are usage errors that show the usage text", () => {
    expect(usageError([])).toMatchObject({ message: "missing command", showUsage: true });
    expect(usageError(["collapse"])).toMatchObject({ message: "unknown command 'collapse'", showUsage: true });
    expect(usageError(["snapshot"]).showUsage).toBe(true);
    expect(usageError(["snapshot", "delete", "811"]).message).toContain("'delete'");
  });

  it("unknown options are usage errors", () => {
    expect(usageError(["collapses", "--colour"]).message).toBe("unknown option --colour");
    expect(usageError(["collapses", "-v"]).message).toBe("unknown option -v");
    expect(usageError(["collapses", "--json=yes"]).message).toBe("--json takes no value");
  });
});

describe("parseArgs: addresses and deadline", () => {
  it("flags beat PREFIXCTL_* variables, which beat the defaults", () => {
    const env = { PREFIXCTL_CACHE_MONITOR: "10.0.0.5:7000", PREFIXCTL_RULES_SNAPSHOT: "rules.internal:50052" };
    expect(command(["collapses"], env)).toMatchObject({
      targets: {
        "cache-monitor": "10.0.0.5:7000",
        "rules-snapshot": "rules.internal:50052",
        "prompt-assembly": defaultTargets["prompt-assembly"],
      },
    });
    expect(command(["collapses", "--cache-monitor", "127.0.0.1:9"], env)).toMatchObject({
      targets: { "cache-monitor": "127.0.0.1:9" },
    });
  });

  it("rejects addresses that are not host:port, naming the flag or the variable", () => {
    expect(usageError(["replay", "1", "--prompt-assembly", "localhost"]).message).toContain("--prompt-assembly");
    expect(usageError(["replay", "1", "--prompt-assembly", "h:70000"]).message).toContain("host:port");
    expect(usageError(["collapses"], { PREFIXCTL_CACHE_MONITOR: "nope" }).message).toContain("PREFIXCTL_CACHE_MONITOR");
  });

  it("accepts an IPv6 literal", () => {
    expect(command(["collapses", "--cache-monitor", "[::1]:50054"])).toMatchObject({
      targets: { "cache-monitor": "[::1]:50054" },
    });
  });

  it("--timeout takes ms, s or m and is bounded", () => {
    expect(command(["trace", "1", "--timeout", "250ms"])).toMatchObject({ timeoutMs: 250 });
    expect(command(["trace", "1", "--timeout", "2m"])).toMatchObject({ timeoutMs: 120_000 });
    expect(usageError(["trace", "1", "--timeout", "5"]).message).toContain("--timeout");
    expect(usageError(["trace", "1", "--timeout", "1d"]).message).toContain("--timeout");
    expect(usageError(["trace", "1", "--timeout", "11m"]).message).toContain("at most 10m");
  });
});
