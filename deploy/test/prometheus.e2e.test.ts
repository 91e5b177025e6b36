// The fleet view against the real thing: the four gRPC services (startStack, each with its own
// METRICS_PORT) and a gateway in stabilize mode in front of the fake provider, scraped by a real Prometheus (Debian's 2.42, from deploy/scripts/prometheus-deps.sh)
// every second with the alert rules loaded. A few harness turns and one provoked collapse (a
// harness section rewritten, so the provider's cache misses) later, every PromQL expression of the
// Grafana dashboard and of the alert rules (an alert's threshold removed: the series it compares)
// returns at least one series. So no panel and no alert points at a metric or label that is not there.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "@prefix-guard/bus/testing";
import { loadGatewayConfig, type RunningGateway, startGateway } from "@prefix-guard/gateway";
import { FakeProvider } from "@prefix-guard/gateway/testing";
import { callUnary } from "@prefix-guard/grpc";
import { silentLogger } from "@prefix-guard/logging";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  alertQueries,
  alertsPath,
  dashboardQueries,
  type PromQuery,
  withGrafanaVariables,
  withoutThreshold,
} from "./observability-assets";
import { type ServiceName, type Stack, startStack } from "./stack";
import {
  type DebianTooling,
  freePort,
  installPrometheusTooling,
  mainSessionRequest,
  sectionsWithSkills,
  sessionTurn,
  type TurnBuild,
  type TurnClients,
} from "./support";

const SERVICES: readonly ServiceName[] = ["session-events", "rules-snapshot", "prompt-assembly", "cache-monitor"];
const deadline = { deadlineMs: 10_000 };

/** One series of an instant query: its labels and [time, value]. */
interface PromSeries {
  readonly metric: Record<string, string>;
  readonly value: readonly [number, string];
}

interface PromResult {
  readonly status: string;
  readonly error?: string;
  readonly data?: { readonly result: readonly PromSeries[] };
}

describe("dashboard and alert expressions against a real Prometheus scraping the services", () => {
  let tooling: DebianTooling;
  let stack: Stack | undefined;
  let fake: FakeProvider | undefined;
  let gateway: RunningGateway | undefined;
  let prometheus: ChildProcess | undefined;
  let prometheusLog = "";
  let promUrl = "";
  let dataDir = "";

  beforeAll(async () => {
    tooling = installPrometheusTooling();
    if (!tooling.ready) return;
    const ports = Object.fromEntries(await Promise.all(SERVICES.map(async (s) => [s, await freePort()] as const)));
    stack = await startStack({
      cacheMonitor: true,
      serviceEnv: Object.fromEntries(SERVICES.map((s) => [s, { METRICS_PORT: String(ports[s]) }])),
    });
    // Stabilize mode, so its stabilization counter is there too.
    fake = await FakeProvider.start();
    const gatewayMetricsPort = await freePort();
    gateway = await startGateway(
      loadGatewayConfig({
        GATEWAY_PORT: "0",
        GATEWAY_MODE: "stabilize",
        METRICS_PORT: String(gatewayMetricsPort),
        OPENAI_UPSTREAM_URL: fake.url,
        ANTHROPIC_UPSTREAM_URL: fake.url,
        SHUTDOWN_GRACE_MS: "1000",
      }),
      { logger: silentLogger() },
    );
    const targets = [...SERVICES.map((s) => ports[s]), gatewayMetricsPort];
    dataDir = mkdtempSync(join(tmpdir(), "pg-prometheus-"));
    const configPath = join(dataDir, "prometheus.yml");
    writeFileSync(
      configPath,
      [
        "global: { scrape_interval: 1s, evaluation_interval: 1s }",
        `rule_files: [${JSON.stringify(alertsPath)}]`,
        "scrape_configs:",
        "  - job_name: prefix-guard",
        "    static_configs:",
        `      - targets: [${targets.map((port) => `"127.0.0.1:${port}"`).join(", ")}]`,
      ].join("\n"),
    );
    const promPort = await freePort();
    promUrl = `http://127.0.0.1:${promPort}`;
    prometheus = spawn(
      "prometheus",
      [
        `--config.file=${configPath}`,
        `--storage.tsdb.path=${join(dataDir, "tsdb")}`,
        `--web.listen-address=127.0.0.1:${promPort}`,
        "--log.level=warn",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    prometheus.stderr?.on("data", (d: Buffer) => (prometheusLog += d.toString()));
    await eventually(async () => (await fetch(`${promUrl}/-/ready`)).ok || undefined, {
      what: `Prometheus ready (log: ${prometheusLog})`,
      timeoutMs: 20_000,
    });
  }, 600_000);

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((resolve) => prometheus?.once("exit", resolve));
      prometheus.kill("SIGTERM");
      await exited;
    }
    await stack?.stop();
    await gateway?.stop();
    await fake?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const query = async (expr: string): Promise<PromResult> =>
    (await (await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`)).json()) as PromResult;

  /**
   * The series of `expr` once `accept` takes them. Prometheus holds what the services counted only
   * after its next scrape of each (every second, each target at its own offset), so a series a test
   * asserts on is waited for; the timeout error names the expression and what it last returned.
   */
  const seriesUntil = async (
    expr: string,
    accept: (series: readonly PromSeries[]) => boolean,
    options: { readonly what: string; readonly timeoutMs?: number },
  ): Promise<readonly PromSeries[]> => {
    let last: PromResult | undefined;
    try {
      return await eventually(
        async () => {
          last = await query(expr);
          const series = last.data?.result ?? [];
          return last.status === "success" && accept(series) ? series : undefined;
        },
        { what: options.what, timeoutMs: options.timeoutMs ?? 30_000, intervalMs: 250 },
      );
    } catch (error) {
      throw new Error(
        `${(error as Error).message}; ${expr} last returned ${JSON.stringify(last?.data?.result ?? last)}`,
      );
    }
  };

  it("scrapes all five services, loads the alert rules, and finds a series for every dashboard and alert expression", async ({
    skip,
  }) => {
    tooling.skipUnlessReady(skip);
    if (stack === undefined || stack.monitor === undefined) throw new Error("stack did not start");
    await driveTurnsAndACollapse(stack);
    if (gateway === undefined) throw new Error("gateway did not start");
    await callThroughGateway(gateway);

    const up = await seriesUntil('up{job="prefix-guard"} == 1', (series) => series.length === SERVICES.length + 1, {
      what: "five targets up",
      timeoutMs: 20_000,
    });
    expect(up).toHaveLength(SERVICES.length + 1);
    const rules = (await (await fetch(`${promUrl}/api/v1/rules?type=alert`)).json()) as {
      data: { groups: { rules: { name: string; health: string }[] }[] };
    };
    const loaded = rules.data.groups.flatMap((g) => g.rules);
    expect(loaded).toHaveLength(alertQueries().length);
    for (const rule of loaded) expect(rule.health, rule.name).not.toBe("err");

    const queries: PromQuery[] = [
      ...dashboardQueries().map((q) => ({ ...q, expr: withGrafanaVariables(q.expr) })),
      ...alertQueries().map((q) => ({ ...q, expr: withoutThreshold(q.expr) })),
    ];
    // The collapse reaches the counters after its RecordUsage; a few scrapes later every series is there.
    const missing = await eventually(
      async () => {
        const empty: string[] = [];
        for (const q of queries) {
          const result = await query(q.expr);
          if (result.status !== "success") throw new Error(`${q.origin}: ${result.error} in ${q.expr}`);
          if ((result.data?.result.length ?? 0) === 0) empty.push(`${q.origin}: ${q.expr}`);
        }
        return empty.length === 0 ? empty : undefined;
      },
      { what: "a series for every expression", timeoutMs: 30_000 },
    ).catch(async () => {
      const empty: string[] = [];
      for (const q of queries) if (((await query(q.expr)).data?.result.length ?? 0) === 0) empty.push(q.origin);
      return empty;
    });
    expect(missing).toEqual([]);

    // The provoked collapse is counted once, by section and cause, never by session. Each series
    // below is created by its first count, so once Prometheus has it, it holds the count.
    const present = (series: readonly PromSeries[]) => series.length > 0;
    const collapses = await seriesUntil("sum by (section, cause) (prefixguard_cache_collapses_total)", present, {
      what: "the collapse by section and cause in Prometheus",
    });
    expect(collapses.map((s) => ({ ...s.metric, count: s.value[1] }))).toEqual([
      { section: "skills", cause: "section_changed", count: "1" },
    ]);
    const breaks = await seriesUntil('prefixguard_prefix_breaks_total{section="skills",expected="false"}', present, {
      what: "the skills break in Prometheus",
    });
    expect(breaks).toHaveLength(1);
    expect(breaks[0]?.metric).toMatchObject({ cause: "section_changed", service: "prompt-assembly" });
    expect(breaks[0]?.value[1]).toBe("1");
    // The skills rewrite is an avoidable break, counted under the session's workspace.
    const byWorkspace = await seriesUntil('prefixguard_workspace_prefix_breaks_total{expected="false"}', present, {
      what: "the avoidable break by workspace in Prometheus",
    });
    expect(byWorkspace).toHaveLength(1);
    expect(byWorkspace[0]?.metric.workspace).toMatch(/pg-prom-ws-/);
    expect(byWorkspace[0]?.value[1]).toBe("1");
    const labels = (await (await fetch(`${promUrl}/api/v1/labels`)).json()) as { data: string[] };
    expect(labels.data.filter((l) => /session/.test(l))).toEqual([]);
  });
});

/**
 * Five turns of one session with a warm cache, then a turn whose skills section the harness
 * rewrote: our prefix breaks (avoidably) and the provider reports no cached tokens, a collapse.
 * Each turn is priced once cache-monitor's row of its build says whether the prefix changed, so the
 * collapse is explained by the rewrite. Then one call that is refused.
 */
async function driveTurnsAndACollapse(clients: TurnClients): Promise<void> {
  const sessionId = `prom-${Date.now()}`;
  const workspace = mkdtempSync(join(tmpdir(), "pg-prom-ws-"));
  writeFileSync(join(workspace, "AGENTS.md"), "# Rules\n- use pnpm\n");
  const { sessions } = clients;
  await callUnary(sessions, sessions.createSession, mainSessionRequest(sessionId, workspace), deadline);
  const buildWith = (skills: string): TurnBuild => ({
    sections: sectionsWithSkills(skills),
    tools: [{ name: "shell", description: "run a command", inputSchemaJson: '{"type":"object"}' }],
    wireFormat: WireFormat.WIRE_FORMAT_OPENAI_CHAT,
    model: "gpt-4o-2024-08-06",
    workspace,
    rulesSource: { $case: "rulesFile", value: { path: join(workspace, "AGENTS.md") } },
    embed: false,
    locale: "en",
  });
  for (let turn = 0; turn < 6; turn += 1) {
    const collapseTurn = turn === 5;
    const promptTokens = 8_000 + turn * 200;
    const { priced } = await sessionTurn(
      clients,
      {
        sessionId,
        text: `turn ${turn}`,
        build: buildWith(collapseTurn ? "skills v2" : "skills v1"),
        usage: {
          model: "gpt-4o-2024-08-06",
          promptTokens,
          cachedTokens: turn === 0 || collapseTurn ? 0 : promptTokens - 300,
          completionTokens: 100,
          cacheCreationTokens: 0,
          provider: "openai",
          calledAtMs: Date.now(),
        },
        prefixChanged: collapseTurn,
      },
      deadline,
    );
    expect(priced.collapse !== undefined, `turn ${turn} collapse`).toBe(collapseTurn);
  }
  // One refused call, for the "RPC errors" panel: GetSession of a session that does not exist.
  await expect(
    callUnary(sessions, sessions.getSession, { sessionId: `${sessionId}-missing` }, deadline),
  ).rejects.toThrow(/NOT_FOUND|not found/i);
}

/** One Chat Completions call with tools through the gateway, for its request, latency and stabilization panels. */
async function callThroughGateway(gateway: RunningGateway): Promise<void> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-prometheus-test" },
    body: JSON.stringify({
      model: "gpt-4o",
      messages: [{ role: "user", content: "hello" }],
      tools: ["zeta", "alpha"].map((name) => ({
        type: "function",
        function: { name, parameters: { type: "object" } },
      })),
    }),
  });
  expect(response.status).toBe(200);
  await response.text();
}
