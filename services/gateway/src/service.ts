import type { MessageBus } from "@prefix-guard/bus";
import type { Logger } from "@prefix-guard/logging";
import { openMetrics } from "@prefix-guard/runtime";
import type { Registry } from "prom-client";
import { ProxyHandler, startProxyServer } from "./adapters/http/proxy-server";
import { GatewayMetrics } from "./adapters/metrics/gateway-metrics";
import type { Observer } from "./application/observer";
import type { GatewayConfig } from "./config";
import { DEFAULT_USAGE_READER_LIMITS } from "./domain/usage-stream";
import { gatewayAccess, gatewayStabilizer, gatewayUpstreams } from "./gateway-parts";
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
  // Who may call; a setting that cannot work stops start-up here (as a bad catalogue does below).
  const { gate, tlsFiles } = gatewayAccess(config, logger, now);
  const serviceMetrics = await openMetrics(
    "gateway",
    { GRPC_HOST: config.GATEWAY_HOST, METRICS_PORT: config.METRICS_PORT },
    logger,
  );
  const metrics = new GatewayMetrics(serviceMetrics.registry);
  let stabilizer: ReturnType<typeof gatewayStabilizer>;
  try {
    stabilizer = gatewayStabilizer(config, serviceMetrics.registry, logger);
  } catch (error) {
    gate.close();
    await serviceMetrics.close();
    throw error;
  }
  const observation = startGatewayObservation(config, {
    logger,
    now,
    metrics: serviceMetrics,
    unobserved: metrics,
    bus: deps.bus,
    observer: deps.observer,
    observationThread: deps.observationThread,
  });
  const upstreams = gatewayUpstreams(config);
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
