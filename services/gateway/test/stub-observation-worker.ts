// A stand-in for observation-worker.ts that speaks the same protocol, so the proxy's side
// (observation-thread.ts) is tested without Kafka or a database. Its behaviour per exchange comes
// from the session header: "hold" is never reported handled, "crash" ends the thread, "usage" is
// reported with a usage_missing; anything else is reported handled.
import { parentPort, workerData } from "node:worker_threads";
import type { FromObservationThread, ToObservationThread } from "../src/adapters/worker/observation-messages";

const port = parentPort;
if (port === null) throw new Error("runs as a worker thread");
const { metricsDelayMs } = workerData as { metricsDelayMs: number };

port.on("message", (message: ToObservationThread) => {
  const reply = (answer: FromObservationThread) => port.postMessage(answer);
  if (message.kind === "exchanges") {
    for (const facts of message.facts) {
      const session = facts.sessionHeader;
      if (session === "hold") continue;
      if (session === "crash") process.exit(3);
      // The bytes arrived whole: their length is the proof the test reads back.
      const bytes = facts.requestBytes.byteLength;
      reply({
        kind: "observed",
        count: 1,
        bytes,
        unobserved: session === "usage" ? { usage_missing: 1 } : bytes === 0 ? { request_not_json: 1 } : {},
      });
    }
  } else if (message.kind === "metrics") {
    setTimeout(() => reply({ kind: "metrics", id: message.id, text: "stub_series 1\n" }), metricsDelayMs);
  } else {
    reply({ kind: "stopped" });
    port.close();
  }
});
