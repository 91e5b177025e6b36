// A subscription's fetchMinBytes / fetchMaxWaitMs against a real broker: a consumer that can wait
// takes writes arriving one by one in a few large batches, where the default takes them as they come.
import { silentLogger } from "@prefix-guard/logging";
import { afterAll, describe, expect, it } from "vitest";
import { createKafkaBus } from "./kafka-bus";
import type { SubscribeOptions } from "./port";
import { eventually, testKafkaBrokers, uniqueName } from "./testing";

const bus = createKafkaBus({ brokers: testKafkaBrokers, clientId: "fetch-min-bytes", logger: silentLogger() });
afterAll(() => bus.close());

/** Batches handed to a subscriber while 40 small messages are published 10 ms apart. */
async function batchesOfTrickle(fetch: Pick<SubscribeOptions, "fetchMinBytes" | "fetchMaxWaitMs">) {
  const topic = uniqueName("fetch-min-bytes");
  await bus.ensureTopics([{ topic, partitions: 1 }]);
  const batches: number[] = [];
  const sub = await bus.subscribe({
    topic,
    groupId: uniqueName("g"),
    ...fetch,
    handleBatch: async (messages) => void batches.push(messages.length),
  });
  for (let i = 0; i < 40; i++) {
    await bus.publish(topic, [{ key: "k", value: new TextEncoder().encode(`write ${i}`) }]);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await eventually(() => batches.reduce((a, b) => a + b, 0) === 40, { what: "every write", timeoutMs: 20_000 });
  await sub.stop();
  return batches;
}

describe("fetchMinBytes over real Kafka", () => {
  it("takes a trickle of writes in a few batches when the fetch may wait for bytes", async () => {
    const lazy = await batchesOfTrickle({ fetchMinBytes: 1024 * 1024, fetchMaxWaitMs: 2_000 });
    expect(lazy.length).toBeLessThanOrEqual(3);
  });

  it("takes the same trickle as it comes by default", async () => {
    const eager = await batchesOfTrickle({});
    expect(eager.length).toBeGreaterThan(10);
  });
});
