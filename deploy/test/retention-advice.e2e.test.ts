import { uniqueName } from "@prefix-guard/bus/testing";
import { callUnary } from "@prefix-guard/grpc";
import type {
  RawProviderUsage,
  RecordUsageRequest,
  RecordUsageResponse,
} from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { runPrefixctl } from "./support";

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

  it("exits 1 naming the session when it has no calls", async () => {
    const result = await prefixctl(["advise", "no-such-session", "--cache-monitor", stack.addresses["cache-monitor"]]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("no calls recorded for session no-such-session");
  });
});
