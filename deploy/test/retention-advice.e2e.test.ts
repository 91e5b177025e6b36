import { uniqueName } from "@prefix-guard/bus/testing";
import { callUnary } from "@prefix-guard/grpc";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import type {
  RawProviderUsage,
  RecordUsageRequest,
  RecordUsageResponse,
} from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { mainSessionRequest, prefixctlJsonUntil, runPrefixctl, sessionTurn, type TurnBuild } from "./support";

const prefixctl = (argv: string[]) => runPrefixctl(argv);

const T0 = Date.UTC(2026, 9, 14, 5, 0, 0);
const MINUTE = 60_000;

describe("prefixctl advise", () => {
  const sessionId = uniqueName("advise");
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ cacheMonitor: true, serviceEnv: { "cache-monitor": { PRICE_CATALOGUE: "builtin" } } });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const record = (raw: RawProviderUsage) => {
    const monitor = stack.monitor;
    if (monitor === undefined) throw new Error("the stack runs no cache-monitor");
    // Usage forwarded with no build of prefix-guard behind it (the advisor needs only the calls).
    return callUnary<RecordUsageRequest, RecordUsageResponse>(
      monitor,
      monitor.recordUsage,
      { sessionId, raw, idempotencyKey: "", providerResponseId: "", unbuilt: true },
      { deadlineMs: 10_000 },
    );
  };

  it("prints that 1h retention would have cost least for calls 20 minutes apart, and by how much", async () => {
    for (let call = 0; call < 5; call++) {
      // Every call found the cache expired and wrote its whole 100k-token prompt again (5-minute writes).
      await record({
        provider: "anthropic",
        requestId: `req-${call}`,
        model: "claude-sonnet-4-5",
        calledAtMs: T0 + call * 20 * MINUTE,
        usageJson: JSON.stringify({
          input_tokens: 0,
          cache_read_input_tokens: 0,
          cache_creation_input_tokens: 100_000,
          output_tokens: 500,
        }),
      });
    }
    const monitor = stack.addresses["cache-monitor"];
    const text = await prefixctl(["advise", sessionId, "--cache-monitor", monitor]);
    expect(text.code).toBe(0);
    // 5m: 5 × 100,000 × 3.75; 1h: 100,000 × 6 + 4 × 100,000 × 0.3 (USD per million); outputs equal.
    expect(text.stdout).toContain("Use 1h retention: it would have cost 1.1550 USD less than the 5m default.");
    expect(text.stdout).toMatch(/^24h\s+\S+\s+4\s+1\s+no \(priced, not recommended\)$/m);

    const json = JSON.parse((await prefixctl(["advise", sessionId, "--json", "--cache-monitor", monitor])).stdout) as {
      calls: number;
      recorded_cost: number;
      recommended: string;
      retentions: { retention: string; cost: number; hits: number }[];
    };
    expect(json.calls).toBe(5);
    expect(json.recommended).toBe("1h");
    // What was recorded is the 5-minute repricing: the calls were priced with the same write prices.
    expect(json.retentions[0]?.cost).toBeCloseTo(json.recorded_cost, 9);
    expect(json.retentions.map((r) => r.hits)).toEqual([0, 4, 4]);
  });

  it("prices every session built in a workspace with --workspace, each on its own calls", async () => {
    const workspace = `/srv/ws/${uniqueName("advise-ws")}`;
    const deadline = { deadlineMs: 10_000 };
    const sessions = [uniqueName("ws-a"), uniqueName("ws-b")];
    // No workspace in the request: the build's workspace is the session's own.
    const build: TurnBuild = {
      sections: [{ key: "persona", text: "persona" }],
      tools: [],
      wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
      model: "claude-sonnet-4-5",
      workspace: "",
      embed: false,
      locale: "",
    };
    for (const id of sessions) {
      await callUnary(stack.sessions, stack.sessions.createSession, mainSessionRequest(id, workspace), deadline);
      for (let call = 0; call < 3; call++) {
        await sessionTurn(stack, {
          sessionId: id,
          text: `q${call}`,
          build,
          usage: {
            model: "claude-sonnet-4-5",
            promptTokens: 100_000,
            cachedTokens: 0,
            completionTokens: 500,
            cacheCreationTokens: 100_000,
            provider: "anthropic",
            calledAtMs: T0 + call * 20 * MINUTE,
          },
        });
      }
    }
    const address = stack.addresses["cache-monitor"];
    const advice = await prefixctlJsonUntil(
      ["advise", "--workspace", workspace, "--cache-monitor", address],
      (json: { calls: number; sessions: number; recommended: string }) => (json.calls >= 6 ? json : undefined),
      { what: `advice on the 6 calls of workspace ${workspace}` },
    );
    expect(advice).toMatchObject({ calls: 6, sessions: 2, recommended: "1h" });
    const text = await prefixctl(["advise", "--workspace", workspace, "--cache-monitor", address]);
    expect(text.stdout).toContain(`Retention advice for workspace ${workspace} (2 sessions): 6 recorded calls`);
    // A call's predecessor is its own session's previous call: 2 sessions × 2 repeat calls hit under 1h.
    expect(text.stdout).toMatch(/^1h \*\s+\S+\s+4\s+2\s+yes$/m);

    const both = await prefixctl(["advise", sessions[0] ?? "", "--workspace", workspace, "--cache-monitor", address]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("not both");
    const unknown = await prefixctl(["advise", "--workspace", "/srv/ws/none", "--cache-monitor", address]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no calls recorded for workspace /srv/ws/none");
  });

  it("exits 1 naming the session when it has no calls", async () => {
    const result = await prefixctl(["advise", "no-such-session", "--cache-monitor", stack.addresses["cache-monitor"]]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("no calls recorded for session no-such-session");
  });
});
