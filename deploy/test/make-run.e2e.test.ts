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
