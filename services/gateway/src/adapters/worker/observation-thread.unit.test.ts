import { MessageChannel, receiveMessageOnPort } from "node:worker_threads";
import { LOCAL_PRINCIPAL } from "@prefix-guard/access";
import { silentLogger } from "@prefix-guard/logging";
import { afterEach, describe, expect, it } from "vitest";
import type { ExchangeFacts, UnobservedReason } from "../../application/observe-exchange";
import { OBSERVED_ROUTES } from "../../domain/routes";
import { factsFromWire, factsToWire, type WireFacts } from "./observation-messages";
import { ObservationThread } from "./observation-thread";

const STUB = new URL("../../../test/stub-observation-worker.ts", import.meta.url);

function facts(sessionHeader: string, requestBytes: Buffer = Buffer.from('{"model":"m"}')): ExchangeFacts {
  return {
    route: OBSERVED_ROUTES.anthropic_messages,
    principal: LOCAL_PRINCIPAL,
    sessionHeader,
    requestBytes,
    usageInjected: false,
    responseStatus: 200,
    outcome: "completed",
    usage: { kind: "none" },
    timings: { startedAtMs: 1, requestReadMs: 0, upstreamHeadersMs: 0, totalMs: 1 },
  };
}

class Counts {
  readonly seen: UnobservedReason[] = [];
  count(reason: UnobservedReason): void {
    this.seen.push(reason);
  }
}

const started: ObservationThread[] = [];
function start(
  counts: Counts,
  maxInFlight = 100,
  metricsDelayMs = 0,
  answerTimeoutMs = 10_000,
  maxInFlightBytes = 1024 * 1024,
): ObservationThread {
  const thread = ObservationThread.start({
    entry: STUB,
    workerData: { metricsDelayMs },
    maxInFlight,
    maxInFlightBytes,
    unobserved: counts,
    logger: silentLogger(),
    restartDelayMs: 50,
    answerTimeoutMs,
  });
  started.push(thread);
  return thread;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

afterEach(async () => {
  for (const thread of started.splice(0)) await thread.stop(2_000);
});

describe("the facts as they cross to the observation thread", () => {
  it("carry exactly the request's bytes, not the pooled allocation around them", () => {
    const pool = Buffer.alloc(8192, 0x20);
    pool.write('{"model":"m"}', 100);
    const view = pool.subarray(100, 113);
    const wire = factsToWire(facts("s", view));
    expect(wire.transfer[0]?.byteLength).toBe(13);
    const back = factsFromWire(wire.facts);
    expect(back.requestBytes.toString()).toBe('{"model":"m"}');
    expect(back.route).toBe(OBSERVED_ROUTES.anthropic_messages);
    // The principal crosses by structured clone, its role set included.
    expect(structuredClone(wire.facts).principal.roles.has("harness")).toBe(true);
    // A copy: the proxy's buffer stays usable after the transfer.
    expect(view.toString()).toBe('{"model":"m"}');
  });

  it("hand over a body that fills its own allocation instead of copying it", () => {
    // What the proxy reads for a body over 4 KiB: Buffer.concat allocates it on its own.
    const body = Buffer.concat([Buffer.from('{"model":"m","pad":"'), Buffer.alloc(6_000, 0x61), Buffer.from('"}')]);
    expect(body.byteOffset).toBe(0);
    const wire = factsToWire(facts("s", body));
    expect(wire.transfer).toEqual([body.buffer]);
    expect(wire.transfer[0]).toBe(body.buffer);
    const { port1, port2 } = new MessageChannel();
    port1.postMessage(wire.facts, wire.transfer);
    const received = receiveMessageOnPort(port2)?.message as WireFacts;
    port1.close();
    port2.close();
    // Transferred, not copied: the proxy's buffer is detached, and the other side has its bytes.
    expect(body.byteLength).toBe(0);
    const back = factsFromWire(received).requestBytes;
    expect(back.byteLength).toBe(6_022);
    expect(back.subarray(0, 13).toString()).toBe('{"model":"m",');
  });
});

describe("the proxy's side of the observation thread", () => {
  it("counts what the thread reports unobserved, and frees the places of what it handled", async () => {
    const counts = new Counts();
    const thread = start(counts);
    thread.observe(facts("usage"));
    thread.observe(facts("plain"));
    await until(() => thread.waiting === 0 && counts.seen.length === 1, "the report");
    expect(counts.seen).toEqual(["usage_missing"]);
  });

  it("sends the exchanges that end close together in one message, each handled", async () => {
    const counts = new Counts();
    const thread = start(counts);
    for (let i = 0; i < 5; i++) thread.observe(facts("usage"));
    await until(() => thread.waiting === 0, "the reports");
    expect(counts.seen).toEqual(Array(5).fill("usage_missing"));
    expect(thread.exchangeMessagesSent).toBe(1);
    // A full batch goes at once, without waiting for the linger.
    for (let i = 0; i < 64; i++) thread.observe(facts("plain"));
    expect(thread.exchangeMessagesSent).toBe(2);
    await until(() => thread.waiting === 0, "the full batch handled");
  });

  it("sends what it took before a stop, so the thread handles it before it ends", async () => {
    const counts = new Counts();
    const thread = start(counts);
    thread.observe(facts("usage"));
    await thread.stop(2_000);
    expect(thread.exchangeMessagesSent).toBe(1);
    expect(counts.seen).toEqual(["usage_missing"]);
  });

  it("drops and counts an exchange past the bound of those waiting (observer_busy), never queueing without end", async () => {
    const counts = new Counts();
    const thread = start(counts, 3);
    for (let i = 0; i < 5; i++) thread.observe(facts("hold"));
    expect(thread.waiting).toBe(3);
    expect(counts.seen).toEqual(["observer_busy", "observer_busy"]);
  });

  it("bounds the request bytes waiting too: past them an exchange is dropped and counted, freed as they are handled", async () => {
    const counts = new Counts();
    const thread = start(counts, 100, 0, 10_000, 1_000);
    const body = (size: number) => Buffer.alloc(size, 0x20);
    // One exchange always goes when none is waiting, even one larger than the bound.
    thread.observe(facts("hold", body(1_500)));
    expect(thread.waiting).toBe(1);
    thread.observe(facts("hold", body(10)));
    expect(counts.seen).toEqual(["observer_busy"]);
    expect(thread.waitingBytes).toBe(1_500);

    const fresh = new Counts();
    const handled = start(fresh, 100, 0, 10_000, 1_000);
    handled.observe(facts("plain", body(600)));
    handled.observe(facts("hold", body(300)));
    handled.observe(facts("hold", body(200)));
    expect(fresh.seen).toEqual(["observer_busy"]);
    // The handled 600 bytes come back in the report and free their place.
    await until(() => handled.waiting === 1, "the report of the handled one");
    expect(handled.waitingBytes).toBe(300);
    handled.observe(facts("hold", body(600)));
    expect(handled.waiting).toBe(2);
    expect(fresh.seen).toEqual(["observer_busy"]);
  });

  it("counts what a thread that died had not handled, and starts another that observes again", async () => {
    const counts = new Counts();
    const thread = start(counts);
    thread.observe(facts("hold"));
    thread.observe(facts("crash"));
    await until(() => counts.seen.length === 2, "the lost exchanges counted");
    expect(counts.seen).toEqual(["observer_failed", "observer_failed"]);
    // Down until the restart: dropped and counted, not queued.
    thread.observe(facts("usage"));
    expect(counts.seen.at(-1)).toBe("observer_failed");
    await until(() => {
      thread.observe(facts("usage"));
      return counts.seen.includes("usage_missing");
    }, "the restarted thread's report");
  });

  it("serves the thread's series, and nothing (not a hang) when it does not answer in time", async () => {
    expect(await start(new Counts()).metricsText()).toBe("stub_series 1\n");
    const slow = start(new Counts(), 100, 1_500, 300);
    // Up first (its report came back), so only the answer is late, not the thread's start.
    slow.observe(facts("plain"));
    await until(() => slow.waiting === 0, "the slow thread up");
    expect(await slow.metricsText()).toBe("");
  });

  it("stops the thread, after which exchanges are counted, not sent", async () => {
    const counts = new Counts();
    const thread = start(counts);
    await thread.stop(2_000);
    thread.observe(facts("plain"));
    expect(counts.seen).toEqual(["observer_failed"]);
  });
});
