// The Kafka consumer's commit interval against a real broker: positions applied within the interval
// are held (one commit carries them later), a stop commits them, and a consumer that dies holding
// them has its group read them again rather than lose them.
import { silentLogger } from "@prefix-guard/logging";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKafkaBus } from "./kafka-bus";
import type { MessageBus } from "./port";
import { eventually, testKafkaBrokers, uniqueName } from "./testing";

const admin = new Kafka({
  brokers: testKafkaBrokers,
  clientId: "commit-interval-test",
  logLevel: logLevel.NOTHING,
}).admin();

async function committed(groupId: string, topic: string): Promise<string | undefined> {
  const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return offsets?.partitions.find((p) => p.partition === 0)?.offset;
}

const bytes = (text: string) => new TextEncoder().encode(text);
const openBus = (clientId: string) => createKafkaBus({ brokers: testKafkaBrokers, clientId, logger: silentLogger() });
const publishTexts = (bus: MessageBus, topic: string, texts: readonly string[]) =>
  bus.publish(
    topic,
    texts.map((text) => ({ key: "k", value: bytes(text) })),
  );

/** A one-partition topic and a group subscribed to it with `commitIntervalMs`, collecting what it applies. */
async function subscribed(bus: MessageBus, name: string, commitIntervalMs: number) {
  const topic = uniqueName(name);
  const groupId = uniqueName("g");
  await bus.ensureTopics([{ topic, partitions: 1 }]);
  const seen: string[] = [];
  const sub = await bus.subscribe({
    topic,
    groupId,
    commitIntervalMs,
    handleMessage: async (m) => void seen.push(Buffer.from(m.value).toString()),
  });
  // The first applied position is due at once: the group starts from a committed position.
  await publishTexts(bus, topic, ["a"]);
  await eventually(async () => (await committed(groupId, topic)) === "1", { what: "first commit" });
  return { topic, groupId, seen, sub };
}

describe("Kafka consumer commit interval", () => {
  let bus: MessageBus;
  beforeAll(async () => {
    await admin.connect();
    bus = openBus("commit-interval");
  });
  afterAll(async () => {
    await bus.close();
    await admin.disconnect();
  });

  it("holds positions applied within the interval and commits them when the subscription stops", async () => {
    const { topic, groupId, seen, sub } = await subscribed(bus, "commit-hold", 60_000);
    await publishTexts(bus, topic, ["b", "c", "d"]);
    await eventually(() => seen.length === 4, { what: "four applied" });
    expect(await committed(groupId, topic)).toBe("1");
    await sub.stop();
    expect(await committed(groupId, topic)).toBe("4");
  });

  it("commits every batch with interval 0", async () => {
    const { topic, groupId, seen, sub } = await subscribed(bus, "commit-each", 0);
    await publishTexts(bus, topic, ["b"]);
    await eventually(async () => (await committed(groupId, topic)) === "2", { what: "second commit, not held" });
    await sub.stop();
    expect(seen).toEqual(["a", "b"]);
  });

  it("a consumer that dies holding positions has them read again, never lost", async () => {
    const dying = openBus("commit-interval-dying");
    const { topic, groupId, seen: first } = await subscribed(dying, "commit-crash", 60_000);
    await publishTexts(dying, topic, ["b", "c"]);
    await eventually(() => first.length === 3, { what: "three applied" });
    // Closing the bus disconnects its consumers without their subscriptions' stop: as a crash would.
    await dying.close();
    const second: string[] = [];
    const sub = await bus.subscribe({
      topic,
      groupId,
      commitIntervalMs: 60_000,
      handleMessage: async (m) => void second.push(Buffer.from(m.value).toString()),
    });
    await eventually(() => second.length === 2, { what: "the held two, again" });
    await sub.stop();
    expect(first).toEqual(["a", "b", "c"]);
    expect(second).toEqual(["b", "c"]);
  });
});
