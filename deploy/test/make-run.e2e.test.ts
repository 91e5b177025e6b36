import { FakeProvider } from "@prefix-guard/gateway/testing";
import { checkHealth } from "@prefix-guard/grpc";
import { describe, expect, it } from "vitest";
import { counterTotal, freePort, scrapeMetricsUntil, startEmbeddedSystem } from "./support";

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
    const port = await freePort();
    const system = await startEmbeddedSystem({ METRICS_PORT: String(port) });
    try {
      // The gateway serves before its database opens, and starts its relay (and that relay's series)
      // only once it has; every relay then takes its lease on its own. So the families are read once
      // every service's relay holds its lease, and no late family can hide from the checks below.
      const leases = "prefixguard_relay_leases_held";
      const relayServices = ["session-events", "rules-snapshot", "prompt-assembly", "cache-monitor", "gateway"];
      const text = await scrapeMetricsUntil(
        port,
        relayServices.map((service) => ({ name: leases, labels: { service } })),
      );
      for (const service of relayServices) expect(counterTotal(text, leases, { service }), service).toBe(1);
      expect(text).toContain('prefixguard_relay_events_published_total{service="session-events"} 0');
      expect(text).toContain('prefixguard_checkpoints_due_total{service="prompt-assembly"} 0');
      expect(text).toContain('prefixguard_view_cache_sessions{service="prompt-assembly"} 0');
      expect(text).toContain("# TYPE prefixguard_cache_collapses_total counter");
      expect(text).toContain("# TYPE prefixguard_rules_decisions_total counter");
      expect(text).toMatch(/^prefixguard_gateway_requests_total\{[^}]*service="gateway"[^}]*\} 0$/m);
      // Prometheus rejects a family declared twice; the runtime's metrics describe one process.
      const declared = text.split("\n").filter((line) => line.startsWith("# TYPE "));
      expect(new Set(declared).size).toBe(declared.length);
      expect(text.match(/^process_cpu_user_seconds_total\{/gm)).toHaveLength(1);
    } finally {
      await system.stop("SIGINT");
    }
  });
});

describe("make run's gateway", () => {
  it("prints its base URL with the other endpoints and proxies a call to the configured upstream", async () => {
    const fake = await FakeProvider.start();
    const system = await startEmbeddedSystem({ OPENAI_UPSTREAM_URL: fake.url, ANTHROPIC_UPSTREAM_URL: fake.url });
    try {
      const url = system.gatewayUrl;
      expect(system.output()).toMatch(
        new RegExp(
          `^ {2}gateway {10}${url.replaceAll(".", "\\.")} {3}OPENAI_BASE_URL=${url.replaceAll(".", "\\.")}/v1`,
          "m",
        ),
      );
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sk-make-run-test" },
        body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "hello through make run" }] }),
      });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { object: string }).object).toBe("chat.completion");
      const forwarded = fake.requests.at(-1);
      expect(forwarded?.url).toBe("/v1/chat/completions");
      expect(forwarded?.headers.authorization).toBe("Bearer sk-make-run-test");
      expect(forwarded?.body.toString()).toContain("hello through make run");
    } finally {
      await system.stop("SIGINT");
      await fake.stop();
    }
  });
});
