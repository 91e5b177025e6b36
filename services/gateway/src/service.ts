import type { MessageBus } from "@prefix-guard/bus";
import type { Logger } from "@prefix-guard/logging";
import { loadProviderCatalogue } from "@prefix-guard/providers/load";
import { httpsServerFiles, type ListenerSettings, openMetrics, serverSecurity } from "@prefix-guard/runtime";
import type { Registry } from "prom-client";
import { ProxyHandler, startProxyServer } from "./adapters/http/proxy-server";
import { Upstream } from "./adapters/http/upstream";
import { GatewayMetrics } from "./adapters/metrics/gateway-metrics";
import { StabilizationMetrics } from "./adapters/metrics/stabilization-metrics";
import { CallerGate } from "./application/caller-gate";
import type { Observer } from "./application/observer";
import { Stabilizer } from "./application/stabilizer";
import type { GatewayConfig } from "./config";
import { DEFAULT_USAGE_READER_LIMITS } from "./domain/usage-stream";
import { startGatewayObservation } from "./observation-pipeline";

export interface RunningGateway {
  /** host:port the proxy listens on. */
  readonly address: string;
  /** http(s)://host:port, the base URL clients are pointed at (https with GATEWAY_TLS_CERT_FILE). */
  readonly url: string;
  readonly metrics: Registry;
  /** Bound port of /metrics, or null when METRICS_PORT is 0. */
  readonly metricsPort: number | null;
  stop(): Promise<void>;
}

export interface GatewayDeps {
  readonly logger: Logger;
  /**
   * Where the gateway's events go (prompt.prefix.v1, llm.usage.v1), through its outbox (DATABASE_URL).
   * Without a bus, and without an observer, nothing is published.
   */
  readonly bus?: MessageBus;
  /** Told about every exchange on an observed route, instead of publishing its events (tests). */
  readonly observer?: Observer;
  /** Observe on a thread of its own when TRANSPORT=kafka (main.ts; observation-pipeline.ts says why). */
  readonly observationThread?: boolean;
  readonly now?: () => number;
}

/** Composition root: metrics, the two upstreams, the proxy and its observation. */
export async function startGateway(config: GatewayConfig, deps: GatewayDeps): Promise<RunningGateway> {
  const { logger } = deps;
  const now = deps.now ?? Date.now;
  // Who may call, by the rules every service follows; a setting that cannot work stops start-up here.
  const listener: ListenerSettings = {
    host: { name: "GATEWAY_HOST", value: config.GATEWAY_HOST },
    certFile: { name: "GATEWAY_TLS_CERT_FILE", value: config.GATEWAY_TLS_CERT_FILE },
    keyFile: { name: "GATEWAY_TLS_KEY_FILE", value: config.GATEWAY_TLS_KEY_FILE },
    clientCaFile: { name: "GATEWAY_TLS_CLIENT_CA_FILE", value: config.GATEWAY_TLS_CLIENT_CA_FILE },
  };
  const security = serverSecurity(listener, config, logger);
  const gate = new CallerGate(security.authenticator, now);
  let tlsFiles: ReturnType<typeof httpsServerFiles> | undefined;
  try {
    tlsFiles = security.tls === undefined ? undefined : httpsServerFiles(security.tls, listener);
  } catch (error) {
    gate.close();
    throw error;
  }
  // Stabilize mode only; the catalogue is read before anything listens (a bad file stops start-up).
  const catalogue = config.GATEWAY_MODE === "stabilize" ? loadProviderCatalogue(config.PROVIDER_CATALOGUE_FILE) : null;
  const serviceMetrics = await openMetrics(
    "gateway",
    { GRPC_HOST: config.GATEWAY_HOST, METRICS_PORT: config.METRICS_PORT },
    logger,
  );
  const metrics = new GatewayMetrics(serviceMetrics.registry);
  const observation = startGatewayObservation(config, {
    logger,
    now,
    metrics: serviceMetrics,
    unobserved: metrics,
    bus: deps.bus,
    observer: deps.observer,
    observationThread: deps.observationThread,
  });
  const stabilizer =
    catalogue === null
      ? undefined
      : new Stabilizer(
          {
            volatilePatterns: config.GATEWAY_VOLATILE_PATTERNS,
            noticeLocale: config.GATEWAY_NOTICE_LOCALE,
            catalogue,
            maxSessions: config.GATEWAY_STABILIZE_SESSIONS,
          },
          {
            recorder: new StabilizationMetrics(serviceMetrics.registry),
            onFailure: (err) => logger.warn({ err }, "stabilization failed; the request was sent unchanged"),
          },
        );
  const timeouts = {
    connectMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
    headersMs: config.UPSTREAM_HEADERS_TIMEOUT_MS,
    idleMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
  };
  const upstreams = {
    openai: new Upstream("openai", config.OPENAI_UPSTREAM_URL, timeouts, config.UPSTREAM_KEEP_ALIVE_MS),
    anthropic: new Upstream("anthropic", config.ANTHROPIC_UPSTREAM_URL, timeouts, config.UPSTREAM_KEEP_ALIVE_MS),
  };
  const handler = new ProxyHandler({
    upstreams,
    maxBodyBytes: config.GATEWAY_MAX_BODY_BYTES,
    usageLimits: { ...DEFAULT_USAGE_READER_LIMITS, maxJsonBytes: config.GATEWAY_MAX_OBSERVED_RESPONSE_BYTES },
    observe: (facts) => observation.observe(facts),
    metrics,
    logger,
    now,
    gate,
    tls: { enabled: tlsFiles !== undefined, clientCertificates: tlsFiles?.ca !== undefined },
    ...(stabilizer === undefined ? {} : { stabilizer }),
  });
  let server: Awaited<ReturnType<typeof startProxyServer>>;
  try {
    server = await startProxyServer(config.GATEWAY_HOST, config.GATEWAY_PORT, handler, tlsFiles);
  } catch (error) {
    gate.close();
    await observation.stop(config.SHUTDOWN_GRACE_MS);
    await serviceMetrics.close();
    throw error;
  }
  logger.info(
    {
      address: server.address,
      tls: tlsFiles !== undefined,
      principals: config.PRINCIPALS_FILE === undefined ? "local" : "file",
      mode: config.GATEWAY_MODE,
      openai: upstreams.openai.origin,
      anthropic: upstreams.anthropic.origin,
    },
    "gateway serving",
  );
  let stopped = false;
  return {
    address: server.address,
    url: `${tlsFiles === undefined ? "http" : "https"}://${server.address}`,
    metrics: serviceMetrics.registry,
    metricsPort: serviceMetrics.port,
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.close(config.SHUTDOWN_GRACE_MS);
      gate.close();
      upstreams.openai.close();
      upstreams.anthropic.close();
      // After the server: the last exchanges' events are written, each batch within its deadline.
      await observation.stop(config.SHUTDOWN_GRACE_MS);
      await serviceMetrics.close();
    },
  };
}
