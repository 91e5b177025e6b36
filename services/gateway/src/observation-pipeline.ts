// What the gateway does with an exchange after it ended: cut, compare with the session's last
// request, and write the events to the outbox its relay publishes. Composed once per process, either
// on the proxy's thread (the embedded default, and tests that hand in a bus) or on the observation
// thread (observation-worker.ts), from the same settings.

import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import type { MessageBus } from "@prefix-guard/bus";
import { newEventId } from "@prefix-guard/events";
import type { Logger } from "@prefix-guard/logging";
import type { ServiceMetrics, TransportConfig } from "@prefix-guard/runtime";
import type { Registry } from "prom-client";
import { ObservationOutbox } from "./adapters/bus/observation-outbox";
import { ObservationThread } from "./adapters/worker/observation-thread";
import { ObservationPublisher } from "./application/observation-publisher";
import { type ExchangeFacts, observeExchange, type UnobservedCounter } from "./application/observe-exchange";
import type { Observer } from "./application/observer";
import { RequestCutter } from "./application/request-cutter";
import { SessionMemory } from "./application/session-memory";
import type { GatewayConfig } from "./config";
import { type ObservationSettings, type ObservationWorkerData, observationSettingsOf } from "./observation-settings";

export interface ObservationPipelineDeps {
  readonly bus: MessageBus;
  /** Where the relay's series go. */
  readonly registry: Registry;
  readonly logger: Logger;
  readonly unobserved: UnobservedCounter;
  readonly now: () => number;
}

export interface ObservationPipeline {
  /** Never throws and never rejects: what goes wrong is counted (observeExchange). */
  observe(facts: ExchangeFacts): Promise<void>;
  /** Writes what was observed so far, each batch within its deadline, then closes the database. */
  stop(): Promise<void>;
}

export function startObservationPipeline(
  settings: ObservationSettings,
  deps: ObservationPipelineDeps,
): ObservationPipeline {
  const { logger, unobserved, now } = deps;
  const outbox = ObservationOutbox.start({
    databaseUrl: settings.DATABASE_URL,
    schema: { mode: settings.DATABASE_MIGRATIONS, waitMs: settings.DATABASE_MIGRATIONS_WAIT_MS },
    bus: deps.bus,
    registry: deps.registry,
    logger,
    now,
    unobserved,
    timeoutMs: settings.GATEWAY_OUTBOX_TIMEOUT_MS,
    maxQueued: settings.GATEWAY_OUTBOX_QUEUE,
    retentionMs: settings.OUTBOX_RETENTION_MS,
    relayLeases: settings.RELAY_LEASES,
  });
  const observer = new ObservationPublisher({
    memory: new SessionMemory(settings.GATEWAY_SESSION_MEMORY_BYTES),
    sink: outbox,
    unobserved,
    now,
    newEventId: () => newEventId(now()),
  });
  const cutter = new RequestCutter();
  return {
    observe: (facts) => observeExchange(facts, { cutter, observer, unobserved, logger }),
    stop: () => outbox.stop(),
  };
}

/** How the proxy hands an exchange on once it ended; never throws, never makes the proxy wait. */
export interface GatewayObservation {
  observe(facts: ExchangeFacts): void;
  stop(graceMs: number): Promise<void>;
}

export interface GatewayObservationDeps {
  readonly logger: Logger;
  readonly now: () => number;
  readonly metrics: ServiceMetrics;
  readonly unobserved: UnobservedCounter;
  /** Without a bus and an observer nothing is observed. */
  readonly bus?: MessageBus | undefined;
  /** Told about every exchange instead of publishing its events (tests). */
  readonly observer?: Observer | undefined;
  /**
   * Observe on a thread of its own, with its own Kafka connection from the config (main.ts with
   * TRANSPORT=kafka). The embedded transport lives in this thread, so it observes here.
   */
  readonly observationThread?: boolean | undefined;
}

export function startGatewayObservation(config: GatewayConfig, deps: GatewayObservationDeps): GatewayObservation {
  const { logger, unobserved } = deps;
  if (deps.observer !== undefined) {
    const observerDeps = { cutter: new RequestCutter(), observer: deps.observer, unobserved, logger };
    return {
      observe: (facts) => setImmediate(() => void observeExchange(facts, observerDeps)),
      stop: async () => undefined,
    };
  }
  if (deps.observationThread === true && config.TRANSPORT === "kafka") {
    const workerData: ObservationWorkerData = {
      observation: observationSettingsOf(config),
      transport: transportOf(config),
      logLevel: config.LOG_LEVEL,
    };
    const thread = ObservationThread.start({
      entry: new URL(`./observation-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
      workerData,
      maxInFlight: config.GATEWAY_OUTBOX_QUEUE,
      maxInFlightBytes: config.GATEWAY_OBSERVATION_QUEUE_BYTES,
      unobserved,
      logger,
    });
    deps.metrics.exposeAlso(() => thread.metricsText());
    return { observe: (facts) => thread.observe(facts), stop: (graceMs) => thread.stop(graceMs) };
  }
  if (deps.bus === undefined) return { observe: () => undefined, stop: async () => undefined };
  const pipeline = startObservationPipeline(observationSettingsOf(config), {
    bus: deps.bus,
    registry: deps.metrics.registry,
    logger,
    unobserved,
    now: deps.now,
  });
  return {
    // Off the hot path: the exchange has ended; observation runs on a later turn of the loop.
    observe: (facts) => setImmediate(() => void pipeline.observe(facts)),
    stop: async () => {
      // After the observations already scheduled (setImmediate): the last exchanges' events are written.
      await new Promise((resolve) => setImmediate(resolve));
      await pipeline.stop();
    },
  };
}

function transportOf(config: GatewayConfig): TransportConfig {
  const {
    TRANSPORT,
    KAFKA_BROKERS,
    KAFKA_CLIENT_ID,
    KAFKA_REPLICATION_FACTOR,
    BUS_DATABASE_URL,
    BUS_RETENTION_MS,
    KAFKA_SSL,
    KAFKA_SSL_CA_FILE,
    KAFKA_SASL_MECHANISM,
    KAFKA_SASL_USERNAME,
    KAFKA_SASL_PASSWORD,
    KAFKA_SASL_PASSWORD_FILE,
  } = config;
  return {
    TRANSPORT,
    KAFKA_BROKERS,
    KAFKA_CLIENT_ID,
    KAFKA_REPLICATION_FACTOR,
    BUS_DATABASE_URL,
    BUS_RETENTION_MS,
    KAFKA_SSL,
    KAFKA_SSL_CA_FILE,
    KAFKA_SASL_MECHANISM,
    KAFKA_SASL_USERNAME,
    KAFKA_SASL_PASSWORD,
    KAFKA_SASL_PASSWORD_FILE,
  };
}
