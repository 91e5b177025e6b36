// `make run`: the whole system in one process on its embedded default: SQLite databases under
// .data/, the SQLite-backed embedded transport, each service's gRPC server on loopback, and the
// gateway (HTTP, OpenAI and Anthropic APIs) on loopback in front of the real providers, or of
// OPENAI_UPSTREAM_URL / ANTHROPIC_UPSTREAM_URL when set.
import { loadCacheMonitorConfig, startCacheMonitor } from "@prefix-guard/cache-monitor";
import { loadGatewayConfig, startGateway } from "@prefix-guard/gateway";
import { createLogger } from "@prefix-guard/logging";
import { loadPromptAssemblyConfig, startPromptAssembly } from "@prefix-guard/prompt-assembly";
import { loadRulesSnapshotConfig, startRulesSnapshot } from "@prefix-guard/rules-snapshot";
import { defaultTopicSpecs, openBus, runUntilSignal } from "@prefix-guard/runtime";
import { loadSessionEventsConfig, startSessionEvents } from "@prefix-guard/session-events";
import { startCombinedMetricsServer, startTelemetry } from "@prefix-guard/telemetry";

// One /metrics for the whole process (each service's series labelled by `service`), so the
// services themselves serve none.
const metricsPort = process.env.METRICS_PORT ?? "9460";
const env = { ...process.env, TRANSPORT: "embedded", METRICS_PORT: "0" };
const dataDir = process.env.DATA_DIR ?? ".data";
const sessionEventsPort = process.env.SESSION_EVENTS_PORT ?? "50051";
const rulesSnapshotPort = process.env.RULES_SNAPSHOT_PORT ?? "50052";
const promptAssemblyPort = process.env.PROMPT_ASSEMBLY_PORT ?? "50053";
const cacheMonitorPort = process.env.CACHE_MONITOR_PORT ?? "50054";
const gatewayPort = process.env.GATEWAY_PORT ?? "8787";

const sessionEventsConfig = loadSessionEventsConfig({
  ...env,
  GRPC_PORT: sessionEventsPort,
  DATABASE_URL: `sqlite:${dataDir}/session-events.sqlite`,
});
const rulesSnapshotConfig = loadRulesSnapshotConfig({
  ...env,
  GRPC_PORT: rulesSnapshotPort,
  DATABASE_URL: `sqlite:${dataDir}/rules-snapshot.sqlite`,
});
const logger = createLogger({ service: "prefix-guard", level: sessionEventsConfig.LOG_LEVEL });
const telemetry = startTelemetry({
  serviceName: "prefix-guard-embedded",
  otlpEndpoint: sessionEventsConfig.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
});
const bus = await openBus(
  { ...sessionEventsConfig, BUS_DATABASE_URL: `sqlite:${dataDir}/bus.sqlite` },
  "prefix-guard",
  defaultTopicSpecs(),
  logger,
);

const sessionEvents = await startSessionEvents(sessionEventsConfig, {
  bus: bus.bus,
  logger: logger.child({ component: "session-events" }),
});
const rulesSnapshot = await startRulesSnapshot(rulesSnapshotConfig, {
  bus: bus.bus,
  logger: logger.child({ component: "rules-snapshot" }),
});
const promptAssemblyConfig = loadPromptAssemblyConfig({
  ...env,
  GRPC_PORT: promptAssemblyPort,
  DATABASE_URL: `sqlite:${dataDir}/prompt-assembly.sqlite`,
  SESSION_EVENTS_ADDRESS: sessionEvents.address,
  RULES_SNAPSHOT_ADDRESS: rulesSnapshot.address,
});
const promptAssembly = await startPromptAssembly(promptAssemblyConfig, {
  bus: bus.bus,
  logger: logger.child({ component: "prompt-assembly" }),
});
const cacheMonitor = await startCacheMonitor(
  loadCacheMonitorConfig({
    ...env,
    GRPC_PORT: cacheMonitorPort,
    DATABASE_URL: `sqlite:${dataDir}/cache-monitor.sqlite`,
  }),
  { bus: bus.bus, logger: logger.child({ component: "cache-monitor" }) },
);
const gateway = await startGateway(
  loadGatewayConfig({
    ...env,
    GATEWAY_PORT: gatewayPort,
    DATABASE_URL: `sqlite:${dataDir}/gateway.sqlite`,
  }),
  { bus: bus.bus, logger: logger.child({ component: "gateway" }) },
);

const metricsServer =
  metricsPort === "0"
    ? null
    : await startCombinedMetricsServer(
        [sessionEvents.metrics, rulesSnapshot.metrics, promptAssembly.metrics, cacheMonitor.metrics, gateway.metrics],
        sessionEventsConfig.GRPC_HOST,
        Number(metricsPort),
      );

logger.info(
  {
    sessionEvents: sessionEvents.address,
    rulesSnapshot: rulesSnapshot.address,
    promptAssembly: promptAssembly.address,
    gateway: gateway.address,
    data: dataDir,
  },
  "prefix-guard running (embedded)",
);
process.stdout.write(
  [
    "",
    "prefix-guard is running (embedded: SQLite + in-process transport). Ctrl-C stops it.",
    `  session-events   grpc://${sessionEvents.address}   prefixguard.sessionevents.v1.SessionEvents`,
    `  rules-snapshot   grpc://${rulesSnapshot.address}   prefixguard.rules.v1.RulesSnapshot`,
    `  prompt-assembly  grpc://${promptAssembly.address}   prefixguard.assembly.v1.PromptAssembly`,
    `  cache-monitor    grpc://${cacheMonitor.address}   prefixguard.monitor.v1.CacheMonitor`,
    `  gateway          ${gateway.url}   OPENAI_BASE_URL=${gateway.url}/v1  ANTHROPIC_BASE_URL=${gateway.url}`,
    metricsServer === null
      ? "  metrics          off (METRICS_PORT=0)"
      : `  metrics          http://${sessionEventsConfig.GRPC_HOST}:${metricsServer.port}/metrics   every service, label service`,
    `  data             ${dataDir}/`,
    `  events           prefixctl events tail --embedded ${dataDir}/bus.sqlite   (the log, read-only)`,
    "",
  ].join("\n"),
);

runUntilSignal(
  async () => {
    await metricsServer?.close();
    await gateway.stop();
    await cacheMonitor.stop();
    await promptAssembly.stop();
    await rulesSnapshot.stop();
    await sessionEvents.stop();
    await bus.close();
    await telemetry.shutdown();
  },
  logger,
  sessionEventsConfig.SHUTDOWN_GRACE_MS,
);
