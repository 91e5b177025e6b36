import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { run } from "./run";
import { type FakeServices, startFakeServices } from "./testing/fake-services";

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: { stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => err.push(s) } },
    stdout: () => out.join(""),
    stderr: () => err.join(""),
  };
}

const now = Date.UTC(2026, 9, 14, 14, 0, 0);

describe("prefixctl against real gRPC servers", () => {
  let fake: FakeServices;
  beforeAll(async () => {
    fake = await startFakeServices();
  });
  afterAll(async () => {
    await fake.shutdown();
  });
  beforeEach(() => {
    fake.received.length = 0;
  });

  const prefixctl = async (argv: string[], env = {}) => {
    const out = capture();
    const code = await run([...argv, ...fake.targetFlags], out.io, { now: () => now, env });
    return { code, stdout: out.stdout(), stderr: out.stderr() };
  };

  it("collapses --wide: sends the window over the wire and prints rows, per-section totals and the grand total", async () => {
    const result = await prefixctl(["collapses", "--since", "24h", "--wide"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(fake.received).toEqual([
      {
        method: "ListCollapses",
        request: expect.objectContaining({ sinceMs: now - 86_400_000, sessionId: "", limit: 100 }),
      },
    ]);
    expect(result.stdout).toContain("Cache collapses since 2026-10-13T14:00:00.000Z (last 24h)");
    expect(result.stdout).toMatch(/^811\s+2026-10-14T13:11:11\.539Z\s+1\.9%/m);
    expect(result.stdout).toMatch(/^435 .*FLAG provider_only: outside us: TTL, routing, model switch$/m);
    expect(result.stdout).toMatch(/^workspace-rules\s+110\s+75%\s+\+95\.9200$/m);
    expect(result.stdout).toContain(
      "Total: 146 collapses, extra cost +113.9200: 110 workspace-rules (75%), 36 (none: outside us) (25%)",
    );
  });

  it("collapses --json prints the decoded response under stable keys", async () => {
    const result = await prefixctl(["collapses", "--since", "7d", "--session", "811", "--limit", "5", "--json"]);
    expect(result.code).toBe(0);
    expect(fake.received[0]?.request).toMatchObject({ sinceMs: now - 7 * 86_400_000, sessionId: "811", limit: 5 });
    const json = JSON.parse(result.stdout);
    expect(json.total_collapses).toBe(146);
    expect(json.collapses.map((c: { session_id: string }) => c.session_id)).toEqual(["811", "435"]);
    expect(json.collapses[0]).toMatchObject({
      prompt_tokens: 453_569,
      cached_tokens: 8_576,
      called_at: "2026-10-14T13:11:11.539Z",
    });
    expect(json.totals[1]).toEqual({ section: "", collapses: 36, share: 36 / 146, extra_cost: 18 });
  });

  it("advise: the retention table and the recommendation, over gRPC", async () => {
    const result = await prefixctl(["advise", "811", "--limit", "500"]);
    expect(result.code).toBe(0);
    expect(fake.received[0]).toMatchObject({ method: "AdviseRetention", request: { sessionId: "811", limit: 500 } });
    expect(result.stdout).toMatch(/^1h \*\s+0\.7200\s+4\s+1\s+yes$/m);
    expect(result.stdout).toContain("Use 1h retention: it would have cost 1.1925 USD less than the 5m default.");
  });

  it("trace --wide: every build with usage and the disagreement flag", async () => {
    const result = await prefixctl(["trace", "756", "--limit", "50", "--wide"]);
    expect(result.code).toBe(0);
    expect(fake.received[0]).toMatchObject({ method: "TraceSession", request: { sessionId: "756", limit: 50 } });
    expect(result.stdout).toMatch(/^1\s+2026-10-14T13:11:11\.539Z\s+aaaaaaaaaaaa\s+first/m);
    expect(result.stdout).toMatch(/^2 .*447,652\s+9,216\s+50\s+2\.1%\s+0\.9050\s+COLLAPSE\s+-\s+FLAG provider_only/m);
    expect(result.stdout).toContain(
      "    FLAG provider_only: provider says cache missed but our fingerprints saw no change → cause outside us: TTL, routing, model switch",
    );
  });

  it("fits 120 columns without --wide: fewer columns, the cause and FLAG on their own wrapped lines", async () => {
    for (const argv of [
      ["trace", "756"],
      ["collapses", "--since", "24h"],
    ]) {
      const narrow = await prefixctl(argv);
      const wide = await prefixctl([...argv, "--wide"]);
      expect(narrow.code).toBe(0);
      const longest = (text: string) => Math.max(...text.split("\n").map((line) => [...line].length));
      expect(longest(narrow.stdout)).toBeLessThanOrEqual(120);
      expect(longest(wide.stdout)).toBeGreaterThan(120);
    }
    const trace = (await prefixctl(["trace", "756"])).stdout;
    expect(trace).toMatch(
      /^2\s+2026-10-14 13:11:11\s+same\s+-\s+RETAINED\s+2\.1%\s+0\.9050\s+COLLAPSE\s+-\s+FLAG provider_only$/m,
    );
    expect(trace).not.toContain("REQUEST");
    expect(trace).toContain("    FLAG provider_only: provider says cache missed but our fingerprints saw no change");
    const collapses = (await prefixctl(["collapses", "--since", "24h"])).stdout;
    expect(collapses).toMatch(
      /^811\s+2026-10-14 13:11:11\s+1\.9%\s+99\.8%\s+\+0\.8720\s+section_changed:workspace-rules\s+workspace-rules$/m,
    );
    expect(collapses).toMatch(/^ {4}cause: workspace-rules changed$/m);
  });

  it("trace --json keeps reported cost and full request ids", async () => {
    const json = JSON.parse((await prefixctl(["trace", "756", "--json"])).stdout);
    expect(json.builds[0]).toMatchObject({ request_id: "aaaaaaaaaaaa-first", usage: { reported_cost: 0.1 } });
    expect(json.builds[1]).toMatchObject({ attribution: "provider_only", collapsed: true });
  });

  it("snapshot get: a pinned snapshot, and 'no snapshot' for a session without one", async () => {
    const found = await prefixctl(["snapshot", "get", "811"]);
    expect(found.code).toBe(0);
    expect(found.stdout).toContain("  generation  3");
    expect(found.stdout).toContain("  pinned at   2026-10-13T14:14:38.000Z");
    const none = await prefixctl(["snapshot", "get", "999"]);
    expect(none.code).toBe(0);
    expect(none.stdout).toMatch(/^No rules snapshot for session 999/);
    expect(JSON.parse((await prefixctl(["snapshot", "get", "999", "--json"])).stdout)).toEqual({
      session_id: "999",
      found: false,
      snapshot: null,
    });
  });

  it("snapshot refresh: Invalidate with the reason, and whether a row was removed", async () => {
    const removed = await prefixctl(["snapshot", "refresh", "811", "--reason", "agents-md-fixed"]);
    expect(removed.code).toBe(0);
    expect(fake.received[0]).toEqual({
      method: "Invalidate",
      request: expect.objectContaining({ sessionId: "811", reason: "agents-md-fixed" }),
    });
    expect(removed.stdout).toContain("Removed the rules snapshot of session 811");
    expect((await prefixctl(["snapshot", "refresh", "999"])).stdout).toContain("nothing removed");
  });

  it("replay: RebuildProjection's seq and events applied", async () => {
    const result = await prefixctl(["replay", "756"]);
    expect(result.code).toBe(0);
    expect(fake.received[0]).toMatchObject({ method: "RebuildProjection", request: { sessionId: "756" } });
    expect(result.stdout).toContain("621 events applied, projection seq 621");
  });

  it("finds the services through PREFIXCTL_* variables", async () => {
    const out = capture();
    const code = await run(["replay", "756"], out.io, { env: { PREFIXCTL_PROMPT_ASSEMBLY: fake.address } });
    expect(code).toBe(0);
    expect(out.stdout()).toContain("projection seq 621");
  });

  it("NOT_FOUND: exit 1 with the server's message", async () => {
    const result = await prefixctl(["trace", "missing"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("prefixctl: cache-monitor: session missing has no recorded builds (NOT_FOUND)\n");
    expect(result.stdout).toBe("");
  });

  it("INVALID_ARGUMENT: exit 1 with the server's field and message", async () => {
    const result = await prefixctl(["collapses", "--session", "bad id"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "prefixctl: cache-monitor rejected ListCollapses (INVALID_ARGUMENT): session_id: must not contain spaces\n",
    );
  });

  it("a slow service hits the --timeout deadline", async () => {
    const started = Date.now();
    const result = await prefixctl(["trace", "slow", "--timeout", "200ms"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`cache-monitor at ${fake.address} did not answer TraceSession within 200ms`);
    expect(Date.now() - started).toBeLessThan(900);
  });

  it("bad --since: exit 2 and nothing sent", async () => {
    const result = await prefixctl(["collapses", "--since", "yesterday"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--since");
    expect(fake.received).toEqual([]);
  });
});

describe("prefixctl when a service is down", () => {
  it("names the service, its address and how to start it", async () => {
    const out = capture();
    const code = await run(["collapses", "--cache-monitor", "127.0.0.1:1"], out.io);
    expect(code).toBe(1);
    expect(out.stderr()).toMatch(
      /^prefixctl: cache-monitor is not reachable at 127\.0\.0\.1:1 \(UNAVAILABLE\): is it running\? \(`make run` starts it\)\n/,
    );
    expect(out.stderr()).not.toMatch(/\n\s+at /);
    expect(out.stdout()).toBe("");
  });

  it("says which service for the rules-snapshot and prompt-assembly commands too", async () => {
    const snapshot = capture();
    expect(await run(["snapshot", "get", "811", "--rules-snapshot", "127.0.0.1:1"], snapshot.io)).toBe(1);
    expect(snapshot.stderr()).toContain("rules-snapshot is not reachable at 127.0.0.1:1 (UNAVAILABLE)");
    const replay = capture();
    expect(await run(["replay", "811", "--prompt-assembly", "127.0.0.1:1"], replay.io)).toBe(1);
    expect(replay.stderr()).toContain("prompt-assembly is not reachable at 127.0.0.1:1 (UNAVAILABLE)");
  });
});
