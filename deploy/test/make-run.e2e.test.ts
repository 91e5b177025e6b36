import { createServer } from "node:net";
import { checkHealth } from "@prefix-guard/grpc";
import { describe, expect, it } from "vitest";
import { startEmbeddedSystem } from "./support";

describe("make run (embedded: SQLite + in-process transport)", () => {
  it("serves grpc.health.v1 SERVING for every service and stops on SIGINT within 5 s with exit code 0", async () => {
    const system = await startEmbeddedSystem();
    expect(await checkHealth(system.addresses.sessionEvents, "prefixguard.sessionevents.v1.SessionEvents")).toBe(
      "SERVING",
    );
    expect(await checkHealth(system.addresses.rulesSnapshot, "prefixguard.rules.v1.RulesSnapshot")).toBe("SERVING");
    expect(await checkHealth(system.addresses.promptAssembly, "prefixguard.assembly.v1.PromptAssembly")).toBe(
      "SERVING",
    );
    expect(await checkHealth(system.addresses.cacheMonitor, "prefixguard.monitor.v1.CacheMonitor")).toBe("SERVING");
    for (const address of Object.values(system.addresses)) expect(await checkHealth(address)).toBe("SERVING");
    const { code, ms } = await system.stop("SIGINT");
    expect(code).toBe(0);
    expect(ms).toBeLessThan(5_000);
  });
});

describe("make run's one /metrics", () => {
  it("serves every service's series on one port, each family once, told apart by the service label", async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, "127.0.0.1", () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
      });
    });
    const system = await startEmbeddedSystem({ METRICS_PORT: String(port) });
    try {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(text).toContain('prefixguard_relay_events_published_total{service="session-events"} 0');
      expect(text).toContain('prefixguard_checkpoints_due_total{service="prompt-assembly"} 0');
      expect(text).toContain('prefixguard_view_cache_sessions{service="prompt-assembly"} 0');
      expect(text).toContain("# TYPE prefixguard_cache_collapses_total counter");
      expect(text).toContain("# TYPE prefixguard_rules_decisions_total counter");
      // Prometheus rejects a family declared twice; the runtime's metrics describe one process.
      const declared = text.split("\n").filter((line) => line.startsWith("# TYPE "));
      expect(new Set(declared).size).toBe(declared.length);
      expect(text.match(/^process_cpu_user_seconds_total\{/gm)).toHaveLength(1);
    } finally {
      await system.stop("SIGINT");
    }
  });
});
