// The observation thread's main: its own logger, Kafka connection, database and metrics registry,
// and the same pipeline the proxy's thread composes in the embedded default. Messages wait in the
// port until the bus is open; how many may wait is bounded on the other side (observation-thread.ts).

import { parentPort, workerData } from "node:worker_threads";
import { createLogger } from "@prefix-guard/logging";
import { defaultTopicSpecs, openBus } from "@prefix-guard/runtime";
import { Registry } from "prom-client";
import {
  type FromObservationThread,
  factsFromWire,
  type ToObservationThread,
  type WireFacts,
} from "./adapters/worker/observation-messages";
import { TimeSlicedQueue } from "./adapters/worker/time-sliced-queue";
import type { UnobservedReason } from "./application/observe-exchange";
import { startObservationPipeline } from "./observation-pipeline";
import type { ObservationWorkerData } from "./observation-settings";

/** Handled exchanges are reported at most this often (the proxy's side frees their places then). */
const REPORT_EVERY_MS = 20;
/** Longest the thread observes without reading its sockets (Kafka's answers, the database's). */
const OBSERVE_SLICE_MS = 10;

const port = parentPort;
if (port === null) throw new Error("observation-worker.ts runs as a worker thread (observation-thread.ts starts it)");
const data = workerData as ObservationWorkerData;
const logger = createLogger({ service: "gateway", level: data.logLevel }).child({ thread: "observation" });
// Series only this thread writes (the relay's); the proxy's /metrics serves them with its own.
const registry = new Registry();
registry.setDefaultLabels({ service: "gateway" });

let handled = 0;
let handledBytes = 0;
let unobserved: Partial<Record<UnobservedReason, number>> = {};
let reportTimer: NodeJS.Timeout | null = null;
const report = () => {
  reportTimer = null;
  if (handled === 0 && Object.keys(unobserved).length === 0) return;
  port.postMessage({
    kind: "observed",
    count: handled,
    bytes: handledBytes,
    unobserved,
  } satisfies FromObservationThread);
  handled = 0;
  handledBytes = 0;
  unobserved = {};
};
const counter = {
  count(reason: UnobservedReason) {
    unobserved[reason] = (unobserved[reason] ?? 0) + 1;
  },
};

const bus = await openBus(data.transport, "gateway", defaultTopicSpecs(), logger);
const pipeline = startObservationPipeline(data.observation, {
  bus: bus.bus,
  registry,
  logger,
  unobserved: counter,
  now: Date.now,
});

const exchanges = new TimeSlicedQueue<WireFacts>((facts) => {
  const bytes = facts.requestBytes.byteLength;
  void pipeline.observe(factsFromWire(facts)).finally(() => {
    handled += 1;
    handledBytes += bytes;
    reportTimer ??= setTimeout(report, REPORT_EVERY_MS);
  });
}, OBSERVE_SLICE_MS);

port.on("message", (message: ToObservationThread) => {
  switch (message.kind) {
    case "exchanges":
      for (const facts of message.facts) exchanges.push(facts);
      return;
    case "metrics":
      void registry.metrics().then(
        (text) => port.postMessage({ kind: "metrics", id: message.id, text } satisfies FromObservationThread),
        () => port.postMessage({ kind: "metrics", id: message.id, text: "" } satisfies FromObservationThread),
      );
      return;
    case "stop":
      void stop();
      return;
  }
});

async function stop(): Promise<void> {
  try {
    // Exchanges that arrived before "stop" are observed before the pipeline writes out and closes.
    await exchanges.idle();
    await pipeline.stop();
    await bus.close();
  } catch (error) {
    logger.warn(
      { err: error instanceof Error ? error.name : typeof error },
      "observation thread stopped with an error",
    );
  }
  if (reportTimer !== null) clearTimeout(reportTimer);
  report();
  port?.postMessage({ kind: "stopped" } satisfies FromObservationThread);
  port?.close();
}
