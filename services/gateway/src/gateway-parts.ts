// The parts service.ts assembles, each from its settings: who may call, the stabilizer (stabilize
// mode), and the two upstreams. Every setting that cannot work throws here, before anything listens.

import type { Logger } from "@prefix-guard/logging";
import { loadProviderCatalogue } from "@prefix-guard/providers/load";
import { httpsServerFiles, type ListenerSettings, serverSecurity } from "@prefix-guard/runtime";
import type { Registry } from "prom-client";
import { Upstream } from "./adapters/http/upstream";
import { StabilizationMetrics } from "./adapters/metrics/stabilization-metrics";
import { CallerGate } from "./application/caller-gate";
import { Stabilizer } from "./application/stabilizer";
import type { GatewayConfig } from "./config";

export interface GatewayAccess {
  readonly gate: CallerGate;
  /** The HTTPS listener's files; undefined serves plain HTTP (loopback only, by the security rules). */
  readonly tlsFiles: ReturnType<typeof httpsServerFiles> | undefined;
}

/** Who may call, by the rules every service follows (libs/runtime serverSecurity). */
export function gatewayAccess(config: GatewayConfig, logger: Logger, now: () => number): GatewayAccess {
  const listener: ListenerSettings = {
    host: { name: "GATEWAY_HOST", value: config.GATEWAY_HOST },
    certFile: { name: "GATEWAY_TLS_CERT_FILE", value: config.GATEWAY_TLS_CERT_FILE },
    keyFile: { name: "GATEWAY_TLS_KEY_FILE", value: config.GATEWAY_TLS_KEY_FILE },
    clientCaFile: { name: "GATEWAY_TLS_CLIENT_CA_FILE", value: config.GATEWAY_TLS_CLIENT_CA_FILE },
  };
  const security = serverSecurity(listener, config, logger);
  const gate = new CallerGate(security.authenticator, now);
  try {
    return { gate, tlsFiles: security.tls === undefined ? undefined : httpsServerFiles(security.tls, listener) };
  } catch (error) {
    gate.close();
    throw error;
  }
}

/** Stabilize mode only; its catalogue is read now, so a bad file stops start-up. */
export function gatewayStabilizer(config: GatewayConfig, registry: Registry, logger: Logger): Stabilizer | undefined {
  if (config.GATEWAY_MODE !== "stabilize") return undefined;
  return new Stabilizer(
    {
      volatilePatterns: config.GATEWAY_VOLATILE_PATTERNS,
      noticeLocale: config.GATEWAY_NOTICE_LOCALE,
      catalogue: loadProviderCatalogue(config.PROVIDER_CATALOGUE_FILE),
      maxSessions: config.GATEWAY_STABILIZE_SESSIONS,
    },
    {
      recorder: new StabilizationMetrics(registry),
      onFailure: (err) => logger.warn({ err }, "stabilization failed; the request was sent unchanged"),
    },
  );
}

export function gatewayUpstreams(config: GatewayConfig): { readonly openai: Upstream; readonly anthropic: Upstream } {
  const timeouts = {
    connectMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
    headersMs: config.UPSTREAM_HEADERS_TIMEOUT_MS,
    idleMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
  };
  return {
    openai: new Upstream("openai", config.OPENAI_UPSTREAM_URL, timeouts, config.UPSTREAM_KEEP_ALIVE_MS),
    anthropic: new Upstream("anthropic", config.ANTHROPIC_UPSTREAM_URL, timeouts, config.UPSTREAM_KEEP_ALIVE_MS),
  };
}
