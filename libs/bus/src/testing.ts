// Test helpers shared by every package's integration tests.
import { randomBytes } from "node:crypto";
import { AssignerProtocol, Kafka, logLevel } from "kafkajs";

/** Polls until `check` returns a value (not undefined/false) or the time is up; never a fixed sleep. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${options.what ?? "condition"}${lastError ? `: ${String(lastError)}` : ""}`,
      );
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
}

/** Kafka for integration tests; `make test` starts it (deploy/kafka/kafka.sh). */
export const testKafkaBrokers = (process.env.TEST_KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");

/**
 * Places new consumer groups at the current end of their topics. The test broker's topics keep
 * every earlier suite's events; a stack's fresh group would otherwise replay all of them (into its
 * own empty databases) before it sees its own, seconds to minutes late as a `make test` run goes on.
 */
export async function startGroupsAtEnd(
  brokers: readonly string[],
  groups: readonly { readonly groupId: string; readonly topic: string }[],
): Promise<void> {
  const admin = new Kafka({
    clientId: uniqueName("test-offsets"),
    brokers: [...brokers],
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    for (const { groupId, topic } of groups) {
      // A topic created a moment ago may not have elected its partition leaders yet.
      const ends = await whileKafkaSettles(() => admin.fetchTopicOffsets(topic));
      await whileKafkaSettles(() =>
        admin.setOffsets({
          groupId,
          topic,
          partitions: ends.map(({ partition, high }) => ({ partition, offset: high })),
        }),
      );
    }
  } finally {
    await admin.disconnect();
  }
}

/** Retries `work` while Kafka answers a retriable error (leader election, a forming group), for up to 30 s. */
async function whileKafkaSettles<T>(work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const retriable = (error as { retriable?: unknown }).retriable === true;
      if (!retriable || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(100 * attempt, 1_000)));
    }
  }
}

/** One member of a consumer group and the partitions of each topic it owns. */
export interface GroupMember {
  readonly clientId: string;
  readonly host: string;
  readonly partitions: Readonly<Record<string, readonly number[]>>;
}

/** A message read back with what a fault test checks: where it sits, who published it, and when. */
export interface ReadBackMessage {
  readonly partition: number;
  readonly offset: string;
  readonly timestampMs: number;
  readonly key: string;
  readonly value: Buffer;
  readonly headers: Readonly<Record<string, string>>;
}

/** What fault tests ask Kafka itself (kafkajs admin): group members, lag, and every message of a topic. */
export interface KafkaProbe {
  members(groupId: string): Promise<GroupMember[]>;
  /** Messages between the group's committed offsets and the end of the topic, over all partitions. */
  lag(groupId: string, topic: string): Promise<number>;
  readAll(topic: string, expectAtLeast: number, timeoutMs?: number): Promise<ReadBackMessage[]>;
  close(): Promise<void>;
}

export async function openKafkaProbe(brokers: readonly string[]): Promise<KafkaProbe> {
  const kafka = new Kafka({ brokers: [...brokers], clientId: uniqueName("probe"), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  return {
    async members(groupId) {
      const { groups } = await admin.describeGroups([groupId]);
      return (groups[0]?.members ?? []).map((m) => {
        const assignment = AssignerProtocol.MemberAssignment.decode(m.memberAssignment);
        return {
          clientId: m.clientId,
          host: m.clientHost,
          partitions: Object.fromEntries(
            Object.entries(assignment?.assignment ?? {}).map(([topic, p]) => [topic, [...p].sort((a, b) => a - b)]),
          ),
        };
      });
    },
    async lag(groupId, topic) {
      const [ends, committed] = await Promise.all([
        admin.fetchTopicOffsets(topic),
        admin.fetchOffsets({ groupId, topics: [topic] }),
      ]);
      const at = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
      return ends.reduce((sum, end) => {
        const position = Math.max(Number(end.low), at.get(end.partition) ?? -1);
        return sum + Math.max(0, Number(end.high) - position);
      }, 0);
    },
    async readAll(topic, expectAtLeast, timeoutMs = 60_000) {
      const consumer = kafka.consumer({ groupId: uniqueName("probe-read") });
      const read: ReadBackMessage[] = [];
      await consumer.connect();
      try {
        await consumer.subscribe({ topic, fromBeginning: true });
        await consumer.run({
          eachMessage: async ({ partition, message }) => {
            const headers: Record<string, string> = {};
            for (const [k, v] of Object.entries(message.headers ?? {})) if (v !== undefined) headers[k] = String(v);
            read.push({
              partition,
              offset: message.offset,
              timestampMs: Number(message.timestamp),
              key: message.key?.toString() ?? "",
              value: message.value ?? Buffer.alloc(0),
              headers,
            });
          },
        });
        await eventually(() => read.length >= expectAtLeast, {
          timeoutMs,
          what: `${expectAtLeast} messages on ${topic}`,
        });
        // Whatever was on the topic beyond the expected count (duplicates) arrives right after.
        const ends = await admin.fetchTopicOffsets(topic);
        const total = ends.reduce((n, e) => n + Number(e.high) - Number(e.low), 0);
        await eventually(() => read.length >= total, { timeoutMs, what: `all ${total} messages on ${topic}` });
        return read;
      } finally {
        await consumer.disconnect();
      }
    },
    async close() {
      await admin.disconnect();
    },
  };
}
