import { status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import type { ConnectClients, ConnectOptions, PrefixctlClients } from "./clients";
import { run } from "./run";
import { ServiceCallError } from "./service-error";
import { collapseRow } from "./testing/fixtures";

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: { stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => err.push(s) } },
    stdout: () => out.join(""),
    stderr: () => err.join(""),
  };
}

function unexpected(): never {
  throw new Error("not expected in this test");
}

function fakeClients(overrides: Partial<PrefixctlClients>) {
  const calls: { method: string; request: unknown }[] = [];
  let closed = 0;
  let connected: ConnectOptions | undefined;
  const record =
    <Req, Res>(method: keyof PrefixctlClients, impl: ((request: Req) => Promise<Res>) | undefined) =>
    (request: Req): Promise<Res> => {
      calls.push({ method, request });
      return impl ? impl(request) : unexpected();
    };
  const clients: PrefixctlClients = {
    listCollapses: record("listCollapses", overrides.listCollapses),
    traceSession: record("traceSession", overrides.traceSession),
    adviseRetention: record("adviseRetention", overrides.adviseRetention),
    getSnapshot: record("getSnapshot", overrides.getSnapshot),
    invalidateSnapshot: record("invalidateSnapshot", overrides.invalidateSnapshot),
    rebuildProjection: record("rebuildProjection", overrides.rebuildProjection),
    close: () => {
      closed += 1;
    },
  };
  const connect: ConnectClients = (options) => {
    connected = options;
    return clients;
  };
  return { connect, calls, closed: () => closed, connected: () => connected };
}

const now = Date.UTC(2026, 9, 14, 14, 0, 0);

describe("run", () => {
  it("asks the monitor for the window ending now and prints the table", async () => {
    const fake = fakeClients({
      listCollapses: async () => ({
        collapses: [collapseRow("811")],
        totals: [{ section: "workspace-rules", collapses: 1, extraCost: 0.872 }],
        totalCollapses: 1,
        totalExtraCost: 0.872,
        causeTotals: [],
      }),
    });
    const out = capture();
    const code = await run(["collapses", "--since", "30m", "--session", "811", "--limit", "7"], out.io, {
      connect: fake.connect,
      now: () => now,
    });
    expect(code).toBe(0);
    expect(fake.calls).toEqual([
      { method: "listCollapses", request: { sinceMs: now - 30 * 60_000, sessionId: "811", limit: 7 } },
    ]);
    expect(out.stdout()).toContain("Cache collapses since 2026-10-14T13:30:00.000Z (last 30m) for session 811");
    expect(out.stdout()).toContain("Total: 1 collapse, extra cost +0.8720: 1 workspace-rules (100%)");
    expect(out.stderr()).toBe("");
    expect(fake.closed()).toBe(1);
  });

  it("sends since_ms 0 for --since all and prints parseable JSON with --json", async () => {
    const fake = fakeClients({
      listCollapses: async () => ({ collapses: [], totals: [], totalCollapses: 0, totalExtraCost: 0, causeTotals: [] }),
    });
    const out = capture();
    expect(
      await run(["collapses", "--since", "all", "--json"], out.io, { connect: fake.connect, now: () => now }),
    ).toBe(0);
    expect(fake.calls[0]?.request).toMatchObject({ sinceMs: 0, sessionId: "" });
    expect(JSON.parse(out.stdout())).toMatchObject({ window: { since_ms: 0, since: null }, total_collapses: 0 });
  });

  it("connects with the resolved addresses and deadline", async () => {
    const fake = fakeClients({ rebuildProjection: async () => ({ projectionSeq: 3, eventsApplied: 3 }) });
    const out = capture();
    await run(["replay", "756", "--timeout", "750ms"], out.io, {
      connect: fake.connect,
      env: { PREFIXCTL_PROMPT_ASSEMBLY: "10.1.2.3:6000" },
    });
    expect(fake.connected()).toMatchObject({ timeoutMs: 750, targets: { "prompt-assembly": "10.1.2.3:6000" } });
    expect(out.stdout()).toContain("projection seq 3");
  });

  it("exits 1 for a trace with nothing recorded: text on stderr, --json still on stdout", async () => {
    const fake = fakeClients({ traceSession: async () => ({ builds: [] }) });
    const text = capture();
    expect(await run(["trace", "typo-811"], text.io, { connect: fake.connect })).toBe(1);
    expect(text.stderr()).toBe("No builds recorded for session typo-811.\n");
    expect(text.stdout()).toBe("");
    const json = capture();
    expect(await run(["trace", "typo-811", "--json"], json.io, { connect: fake.connect })).toBe(1);
    expect(JSON.parse(json.stdout())).toMatchObject({ builds: [] });
  });

  it("turns a service failure into one friendly line and exit code 1", async () => {
    const fake = fakeClients({
      traceSession: async () => {
        throw new ServiceCallError({
          service: "cache-monitor",
          address: "127.0.0.1:50054",
          method: "TraceSession",
          code: status.NOT_FOUND,
          details: "session 999 not found",
          timeoutMs: 5_000,
        });
      },
    });
    const out = capture();
    expect(await run(["trace", "999"], out.io, { connect: fake.connect })).toBe(1);
    expect(out.stderr()).toBe("prefixctl: cache-monitor: session 999 not found (NOT_FOUND)\n");
    expect(out.stdout()).toBe("");
    expect(fake.closed()).toBe(1);
  });

  it("reports an unexpected error in one line, without a stack", async () => {
    const fake = fakeClients({
      getSnapshot: async () => {
        throw new TypeError("cannot read properties of undefined");
      },
    });
    const out = capture();
    expect(await run(["snapshot", "get", "811"], out.io, { connect: fake.connect })).toBe(1);
    expect(out.stderr()).toBe("prefixctl: unexpected error: cannot read properties of undefined\n");
  });

  it("exits 2 on a usage error without connecting anywhere", async () => {
    let connected = false;
    const out = capture();
    const code = await run(["collapses", "--since", "yesterday"], out.io, {
      connect: () => {
        connected = true;
        return unexpected();
      },
    });
    expect(code).toBe(2);
    expect(connected).toBe(false);
    expect(out.stderr()).toContain("--since must be a duration");
    expect(out.stderr()).toContain("prefixctl help");
  });

  it("prints the usage on stdout for help and on stderr for an unknown command", async () => {
    const help = capture();
    expect(await run(["help"], help.io)).toBe(0);
    expect(help.stdout()).toContain("prefixctl collapses");
    const unknown = capture();
    expect(await run(["frobnicate"], unknown.io)).toBe(2);
    expect(unknown.stderr()).toMatch(/^prefixctl: unknown command 'frobnicate'\n\nprefixctl: why/);
    expect(unknown.stdout()).toBe("");
  });

  it("passes the refresh reason to Invalidate", async () => {
    const fake = fakeClients({ invalidateSnapshot: async () => ({ removed: true }) });
    const out = capture();
    expect(
      await run(["snapshot", "refresh", "811", "--reason", "rules-fixed"], out.io, { connect: fake.connect }),
    ).toBe(0);
    expect(fake.calls[0]).toEqual({
      method: "invalidateSnapshot",
      request: { sessionId: "811", reason: "rules-fixed" },
    });
    expect(out.stdout()).toContain("next build re-pins");
  });
});
